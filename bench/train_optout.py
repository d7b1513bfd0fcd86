"""Train the opt-out scorer (:mod:`relay.core.optout_model`) and write its weights.

Logistic regression by plain stochastic gradient descent (AdaGrad steps, L2
on the weights a sample touches), deterministic: the rows are sorted, then
shuffled by a fixed seed, and the weights are rounded and pruned before
they are written, so the same inputs give the same file byte for byte.

Training data: every ``tests/data/optout/*.tsv`` row, the real SMS of
``tests/data/sms/ham.txt`` as negatives (but the two in ``ham_optouts.txt``,
which are positives). The threshold is chosen on scores from models that did
not see the row scored (leave one set out over the written sets, two halves
of the SMS): the lowest at which those scores, counted only with a cue, reach
precision 0.97. ``bench/optout_loso.py`` runs the same on each held-out set.

    .venv/bin/python bench/train_optout.py           # writes relay/core/data/optout_model.json
    .venv/bin/python bench/train_optout.py --check   # exit 1 if the file would change
"""

from __future__ import annotations

import csv
import json
import math
import random
import sys
import zlib
from collections import Counter
from pathlib import Path

from relay.core.optout import normalise
from relay.core.optout_model import MODEL_PATH, features, may_decide, score

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SEED = 26
EPOCHS = 12
L2 = 1e-4
RATE = 0.3
HAM_WEIGHT = 1.0
PRUNE = 0.05
MIN_SEEN = 2
DIGITS = 3
PRECISION = 0.97

#: (set name, language, text, is an opt-out, sample weight)
Row = tuple[str, str, str, bool, float]


def written_rows() -> list[Row]:
    """The written sets, one row per line, named by their file's stem."""
    rows: list[Row] = []
    for path in sorted((DATA / "optout").glob("*.tsv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                rows.append((path.stem, row["lang"], row["text"], row["label"] == "optout", 1.0))
    return rows


def ham_rows() -> list[Row]:
    """Real personal SMS: negatives, but for the two that are opt-outs."""
    real = set((DATA / "sms" / "ham_optouts.txt").read_text(encoding="utf-8").splitlines())
    lines = (DATA / "sms" / "ham.txt").read_text(encoding="utf-8").splitlines()
    return [("ham", "en", line, line in real, HAM_WEIGHT) for line in lines]


Sample = tuple[list[tuple[str, int]], float, float]


def sample(row: Row) -> Sample:
    """(feature counts, label, weight) of one row."""
    _set, _lang, text, label, weight = row
    return sorted(Counter(features(normalise(text))).items()), float(label), weight


def train(rows: list[Row]) -> dict[str, float]:
    """Weights of a logistic regression fitted to ``rows``."""
    return fit([sample(row) for row in rows])


def fit(samples: list[Sample]) -> dict[str, float]:
    """Weights fitted to prepared samples (the order they come in does not matter),
    compacted as they are stored: features seen in one message only are left out."""
    seen = Counter(feature for feats, _label, _weight in samples for feature, _n in feats)
    samples = sorted(
        ([(f, n) for f, n in feats if seen[f] >= MIN_SEEN], label, weight)
        for feats, label, weight in samples
    )
    random.Random(SEED).shuffle(samples)
    weights: dict[str, float] = {}
    squares: dict[str, float] = {}
    for _epoch in range(EPOCHS):
        for feats, label, weight in samples:
            total = sum(weights.get(f, 0.0) * n for f, n in feats)
            guess = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, total))))
            error = (guess - label) * weight
            for feature, count in feats:
                old = weights.get(feature, 0.0)
                gradient = error * count + L2 * old
                squares[feature] = squares.get(feature, 0.0) + gradient * gradient
                weights[feature] = old - RATE * gradient / math.sqrt(squares[feature] + 1e-8)
    return compact(weights)


def ham_half(row: Row) -> int:
    return zlib.crc32(row[2].encode()) % 2


def held_out_scores(rows: list[Row], ham: list[Row]) -> list[tuple[float, bool]]:
    """(score, is an opt-out) of every row by a model that did not see it: leave one
    written set out, and two halves of the SMS; 0 without a cue (as relay decides)."""
    samples = [sample(r) for r in rows]
    ham_samples = [sample(r) for r in ham]
    scored: list[tuple[float, bool]] = []
    for name in sorted({r[0] for r in rows}):
        train = [s for r, s in zip(rows, samples, strict=True) if r[0] != name] + ham_samples
        scored += _gated(fit(train), [r for r in rows if r[0] == name])
    for half in (0, 1):
        train = samples + [s for r, s in zip(ham, ham_samples, strict=True) if ham_half(r) != half]
        scored += _gated(fit(train), [r for r in ham if ham_half(r) == half])
    return scored


def _gated(weights: dict[str, float], rows: list[Row]) -> list[tuple[float, bool]]:
    found = []
    for row in rows:
        norm = normalise(row[2])
        found.append((score(norm, weights) if may_decide(norm) else 0.0, row[3]))
    return found


def threshold(scored: list[tuple[float, bool]], precision: float = PRECISION) -> float:
    """The lowest score at which the rows scored at or above it reach ``precision``."""
    best = 1.0
    tp = fp = 0
    for value, label in sorted(scored, key=lambda pair: -pair[0]):
        tp += label
        fp += not label
        if tp and tp / (tp + fp) >= precision:
            best = value
    return best


def compact(weights: dict[str, float]) -> dict[str, float]:
    """Rounded, without the weights too small to matter, in a stable order."""
    kept = {f: round(w, DIGITS) for f, w in sorted(weights.items()) if abs(w) >= PRUNE}
    return {f: w for f, w in kept.items() if w}


def dump(weights: dict[str, float], cut: float) -> str:
    """The file's text: the weights, compacted, and the threshold."""
    meta = {
        "seed": SEED,
        "epochs": EPOCHS,
        "l2": L2,
        "rate": RATE,
        "ham_weight": HAM_WEIGHT,
        "precision": PRECISION,
        "min_seen": MIN_SEEN,
        "prune": PRUNE,
    }
    body = {
        "about": "bench/train_optout.py",
        "threshold": round(cut, DIGITS),
        "training": meta,
        "weights": compact(weights),
    }
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def build() -> str:
    """Train on everything, choose the threshold on held-out scores, return the file."""
    rows, ham = written_rows(), ham_rows()
    return dump(train(rows + ham), threshold(held_out_scores(rows, ham)))


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        same = MODEL_PATH.exists() and MODEL_PATH.read_text(encoding="utf-8") == text
        print("unchanged" if same else f"{MODEL_PATH} would change")
        return 0 if same else 1
    MODEL_PATH.parent.mkdir(exist_ok=True)
    MODEL_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {MODEL_PATH} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
