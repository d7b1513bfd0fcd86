"""Leave-one-set-out: how the opt-out scorer would do on wording it never saw.

For each written set in ``tests/data/optout`` in turn, the scorer
(``bench/train_optout.py``) is trained on the other five and the real SMS, and
run once on the held-out set. Its threshold is chosen on the training sets
only: an inner leave-one-set-out over them gives every training row a score
from a model that did not see it, and the threshold is the lowest at which
those scores reach the precision asked for. Three readings per set:

* rules alone (``is_opt_out`` without the model). The rules were tuned on all
  six sets, so this figure is optimistic; their first runs were 0.53-0.70;
* the scorer alone, at that threshold: the fair estimate of its first run;
* rules OR (scorer at the threshold AND a cue of stopping, removing or
  contacting) — what ``is_opt_out`` does.

False alarms on ``tests/data/sms/ham.txt`` are measured by two-fold
cross-fitting: a model trained on every written set and one half of the SMS
scores the other half.

    .venv/bin/python bench/optout_loso.py            # the table
    .venv/bin/python bench/optout_loso.py -v         # and every held-out error
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_optout import (
    Row,
    Sample,
    fit,
    ham_half,
    ham_rows,
    held_out_scores,
    sample,
    threshold,
    written_rows,
)

from relay.core.optout import is_opt_out_by_rules, normalise
from relay.core.optout_model import may_decide, score

ROOT = Path(__file__).resolve().parent.parent
#: The rules as they were when each set was first run (the commit that added the set; for
#: after-round3, the cue reading built afterwards and run once on it, as docs/channels.md
#: reports). written_here has no first run (the rules were written from it) and
#: written_after_rules was added in the rules' own commit.
FIRST_RUN = {
    "written_blind": "bfe48db",
    "written_after_fixes": "5be4589",
    "written_after_round2": "600a5bd",
    "written_after_round3": "2bb9a73",
    "written_round5": "948cf74",
    "written_round6": "c88ebd4",
}
#: Per held-out set: (tp, fp, fn) for rules, scorer, combined; the threshold; the errors;
#: per row, the scorer said yes (with a cue).
Fold = tuple[dict[str, tuple[int, int, int]], float, list[str], list[bool]]


def _sets(rows: list[Row]) -> list[str]:
    return sorted({row[0] for row in rows})


def _scores(train: list[Sample], test: list[Row]) -> list[float]:
    weights = fit(train)
    return [score(normalise(row[2]), weights) for row in test]


def inner_threshold(rows: list[Row], ham: list[Row]) -> float:
    """The threshold chosen on the training sets alone (as ``bench/train_optout.py``)."""
    return threshold(held_out_scores(rows, ham))


def fold(held: str) -> Fold:
    """Train without ``held``, choose the threshold without it, run it once on it."""
    rows = written_rows()
    samples = [sample(r) for r in rows]
    ham_all = ham_rows()
    ham = [sample(r) for r in ham_all]
    train_rows = [r for r in rows if r[0] != held]
    train_samples = [s for r, s in zip(rows, samples, strict=True) if r[0] != held]
    cut = inner_threshold(train_rows, ham_all)
    test = [r for r in rows if r[0] == held]
    weights = fit(train_samples + ham)
    counts = {"rules": [0, 0, 0], "scorer": [0, 0, 0], "combined": [0, 0, 0]}
    errors = []
    said = []
    for _set, lang, text, wanted, _weight in test:
        norm = normalise(text)
        value = score(norm, weights)
        rules = is_opt_out_by_rules(text)
        got = {
            "rules": rules,
            "scorer": value >= cut,
            "combined": rules or (value >= cut and may_decide(norm)),
        }
        for key, hit in got.items():
            counts[key][0] += hit and wanted
            counts[key][1] += hit and not wanted
            counts[key][2] += wanted and not hit
        said.append(value >= cut and may_decide(norm))
        if got["combined"] != wanted:
            errors.append(f"{held} {'missed' if wanted else 'false'} [{lang}] {value:.2f} {text}")
    return {k: (v[0], v[1], v[2]) for k, v in counts.items()}, cut, errors, said


def first_run_rules(commit: str, texts: list[str]) -> list[bool]:
    """The rules as they were at ``commit`` (from git history), on ``texts``."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "relay"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        # The rules alone where the scorer had been added by then.
        code = (
            "import json, sys; from relay.core import optout; "
            "rules = getattr(optout, 'is_opt_out_by_rules', optout.is_opt_out); "
            "print(json.dumps([rules(t) for t in json.load(sys.stdin)]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            check=True,
            cwd=folder,
            env={"PYTHONPATH": folder},
        )
    verdicts: list[bool] = json.loads(done.stdout)
    return verdicts


def first_runs(folds: dict[str, Fold]) -> list[tuple[str, str, str, str, str]]:
    """Per set with a first run: the rules then, the scorer now (never trained on the set),
    and either: what the next unseen set can expect from rules OR scorer."""
    table = []
    pooled = {"rules": [0, 0, 0], "scorer": [0, 0, 0], "combined": [0, 0, 0]}
    langs: dict[str, dict[str, list[int]]] = {}
    rows = written_rows()
    for name, commit in FIRST_RUN.items():
        test = [r for r in rows if r[0] == name]
        then = first_run_rules(commit, [r[2] for r in test])
        counts = {"rules": [0, 0, 0], "scorer": [0, 0, 0], "combined": [0, 0, 0]}
        for row, rules, model in zip(test, then, folds[name][3], strict=True):
            lang = langs.setdefault(row[1], {k: [0, 0, 0] for k in counts})
            for key, hit in (("rules", rules), ("scorer", model), ("combined", rules or model)):
                for tally in (counts[key], lang[key]):
                    tally[0] += hit and row[3]
                    tally[1] += hit and not row[3]
                    tally[2] += row[3] and not hit
        for key, value in counts.items():
            pooled[key] = [a + b for a, b in zip(pooled[key], value, strict=True)]
        table.append((f"{name} (first run)", commit, *(_cells(*counts[k]) for k in counts)))
    table.append(("pooled first runs", "", *(_cells(*v) for v in pooled.values())))
    for lang, counts in sorted(langs.items()):
        table.append((f"first runs, {lang}", "", *(_cells(*counts[k]) for k in counts)))
    return table


def ham_alarms(half: int) -> tuple[int, int, int, float, list[str]]:
    """Scorer false alarms on one half of the SMS, trained on the other half."""
    rows = written_rows()
    ham = ham_rows()
    inside = [r for r in ham if ham_half(r) != half]
    outside = [r for r in ham if ham_half(r) == half]
    samples = [sample(r) for r in rows]
    inside_samples = [sample(r) for r in inside]
    cut = inner_threshold(rows, inside)
    values = _scores(samples + inside_samples, outside)
    alone = [r[2] for r, v in zip(outside, values, strict=True) if not r[3] and v >= cut]
    alarms = [
        text for text in alone if may_decide(normalise(text)) and not is_opt_out_by_rules(text)
    ]
    return len(alarms), len(alone), len(outside), cut, alarms


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.3f} ({hits}/{total})" if total else "n/a"


def _cells(tp: int, fp: int, fn: int) -> str:
    return f"{_ratio(tp, tp + fn)} / {_ratio(tp, tp + fp)}"


def rows(run: Callable[..., list] | None = None) -> list[tuple[str, str, str, str, str]]:
    """(set, threshold, rules, scorer, combined) per held-out set, then pooled and SMS."""
    names = _sets(written_rows())
    with ProcessPoolExecutor(max_workers=2) as pool:
        folds = list(pool.map(fold, names))
        by_name = dict(zip(names, folds, strict=True))
        halves = list(pool.map(ham_alarms, (0, 1)))
    table = []
    pooled = {"rules": [0, 0, 0], "scorer": [0, 0, 0], "combined": [0, 0, 0]}
    for name, (counts, cut, _errors, _said) in zip(names, folds, strict=True):
        for key, value in counts.items():
            pooled[key] = [a + b for a, b in zip(pooled[key], value, strict=True)]
        table.append((name, f"{cut:.2f}", *(_cells(*counts[k]) for k in pooled)))
    table.append(("pooled", "", *(_cells(*v) for v in pooled.values())))
    alarms = sum(h[0] for h in halves)
    alone = sum(h[1] for h in halves)
    total = sum(h[2] for h in halves)
    cuts = "/".join(f"{h[3]:.2f}" for h in halves)
    table.append(
        (
            "real SMS false alarms",
            cuts,
            "0 (rules alone)",
            f"{alone} in {total}",
            f"{alarms} in {total}",
        )
    )
    table.extend(first_runs(by_name))
    if "-v" in sys.argv:
        for _counts, _cut, errors, _said in folds:
            print("\n".join(errors))
        for half in halves:
            print("\n".join(f"sms false alarm: {line}" for line in half[4]))
    return table


def main() -> int:
    print(
        f"{'held-out set':<26} {'cut':<5} {'rules (recall / precision)':<34} "
        f"{'scorer':<34} rules OR scorer+cue"
    )
    for name, cut, *cells in rows():
        print(f"{name:<26} {cut:<5} " + " ".join(f"{c:<34}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
