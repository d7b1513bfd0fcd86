"""How well relay reads the words people send: reply text, opt-outs, addresses.

Runs relay's own functions (the ones ``relay inspect`` and the daemon call)
over the corpora under ``tests/data/`` (real mail and messages that other
projects collected, plus wordings written here, each marked in SOURCES.md) and
returns one row per figure. Every corpus is split in two by a hash of the
case's name: the "dev" part was looked at while writing the rules, the
"held-out" quarter (``crc32(name) % 4 == 0``) was not tuned on, and both
figures are reported so overfitting shows.

``RELAY_REPLY_CORPORA`` (folders separated by ``:``) adds reply corpora that
are not committed, in email_reply_trimmer's layout: ``emails/NAME.txt`` (the
reply), ``trimmed/NAME.txt`` (its new text) and ``elided/NAME.txt`` (what is
history). New text to keep: the trimmed lines, less quoted ``>`` lines (a
quote the contact left in is not new text) and a closing with the signature
after it (relay removes sign-offs, as it does for talon's cases); history to
drop: every elided line of more than 12 characters. Shown apart, per folder.

Run alone (``python bench/accuracy_text.py``) or through the runner
``bench/text_accuracy.py``, which prints every ``bench/accuracy_*.py`` table.
"""

from __future__ import annotations

import csv
import email
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterable
from email import policy
from email.message import EmailMessage
from pathlib import Path

from relay.channels.mail.text import html_to_text, new_part
from relay.core.errors import InvalidInput
from relay.core.optout import is_opt_in, is_opt_out
from relay.engine.contacts.addresses import normalise_address

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


#: The written opt-out sets measured on their own, by file: each one's first run is in
#: docs/channels.md.
_WRITTEN_SPLITS = {
    "written_blind:": "blind",
    "written_after_fixes:": "after-fixes",
    "written_after_round2:": "after-round2",
    "written_after_round3:": "after-round3",
    "written_round5:": "round5",
    "written_round6:": "round6",
}


def split(name: str) -> str:
    """"blind" for wordings written before reading the rules (its first figures are
    in docs/channels.md), "unseen" for corpora added after the rules were written,
    "held-out" for the quarter of the others not looked at while tuning, else "dev"."""
    for prefix, part in _WRITTEN_SPLITS.items():
        if name.startswith(prefix):
            return part
    if name.startswith("crisp/") or name.startswith("written_after_rules:"):
        return "unseen"
    return "held-out" if zlib.crc32(name.encode()) % 4 == 0 else "dev"


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.3f} ({hits}/{total})" if total else "n/a"


# -- reply text ---------------------------------------------------------------


def _mail_body(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix != ".eml":
        return raw.decode("utf-8", "replace")
    mail = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(mail, EmailMessage)
    part = mail.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    content = str(part.get_content())
    return html_to_text(content) if part.get_content_type() == "text/html" else content


_SIGN_OFF = re.compile(r"^(regards|best|thanks|cheers)\b", re.IGNORECASE)
#: A line that is only a closing ("Thanks!", "Best regards,", "Thanks, Ana"), not a sentence.
_CLOSING_ONLY = re.compile(
    r"^((best|kind|warm)\s+)?(regards|wishes|best|thanks|thank\s+you|cheers)[\s,.!]*"
    r"(,\s*\S.{0,30})?$", re.IGNORECASE)


def reply_cases() -> list[tuple[str, str, list[str], list[str]]]:
    """(name, body, keep, drop) for every labelled reply."""
    root = DATA / "replies"
    cases: list[tuple[str, str, list[str], list[str]]] = []
    for labels in (root / "cases.json", root / "crisp" / "cases.json"):
        for case in json.loads(labels.read_text())["cases"]:
            body = _mail_body(root / case["file"])
            cases.append((case["file"], body, case["keep"], case["drop"]))
    talon = json.loads((root / "talon" / "text_quotations.json").read_text())["cases"]
    for index, case in enumerate(talon):
        expected = [line.strip() for line in case["expected"].split("\n") if line.strip()]
        # talon keeps sign-offs ("Regards, Roman"); relay may drop them, so they are
        # not required. Everything else talon kept is new text; every body line
        # talon dropped (longer than a word or two) is history that must be gone.
        keep = [line for line in expected if not _SIGN_OFF.match(line)]
        drop = [
            line.strip()
            for line in case["body"].split("\n")
            if len(line.strip().lstrip(">").strip()) > 12
            and line.strip() not in expected
            and not any(line.strip() in kept for kept in expected)
        ]
        cases.append((f"talon/text_quotations#{index}:{case['name']}", case["body"], keep, drop))
    return cases


def external_reply_cases() -> dict[str, list[tuple[str, str, list[str], list[str]]]]:
    """Per RELAY_REPLY_CORPORA folder: (name, body, keep, drop) (see the docstring)."""
    found: dict[str, list[tuple[str, str, list[str], list[str]]]] = {}
    for folder in filter(None, os.environ.get("RELAY_REPLY_CORPORA", "").split(":")):
        root = Path(folder)
        cases = found.setdefault(root.name, [])
        for path in sorted((root / "emails").glob("*.txt")):
            trimmed = (root / "trimmed" / path.name).read_text(errors="replace").split("\n")
            elided = (root / "elided" / path.name).read_text(errors="replace").split("\n")
            keep: list[str] = []
            for line in (line.strip() for line in trimmed):
                if _CLOSING_ONLY.match(line) or line.startswith("--"):
                    break  # the closing and the signature after it
                if line and not line.startswith(">"):
                    keep.append(line)
            drop = [line.strip() for line in elided if len(line.strip().lstrip(">").strip()) > 12
                    and not any(line.strip() in k for k in keep)]
            body = path.read_text(errors="replace").replace("\r\n", "\n")
            cases.append((path.name, body, keep, drop))
    return found


def _squash(text: str) -> str:
    return " ".join(text.split())


def reply_scores(strip: Callable[[str], str] = new_part) -> dict[str, tuple[int, int, int]]:
    """Per split: (cases, passed, new text kept)."""
    scores = {"dev": [0, 0, 0], "held-out": [0, 0, 0], "unseen": [0, 0, 0]}
    for name, body, keep, drop in reply_cases():
        out = _squash(strip(body))
        kept = all(_squash(k) in out for k in keep)
        gone = not any(_squash(d) in out for d in drop)
        row = scores[split(name)]
        row[0] += 1
        row[1] += kept and gone
        row[2] += kept
    return {k: (v[0], v[1], v[2]) for k, v in scores.items()}


def reply_failures(strip: Callable[[str], str] = new_part) -> Iterable[str]:
    """The names of failing cases with what went wrong (for working on the rules)."""
    for name, body, keep, drop in reply_cases():
        out = _squash(strip(body))
        lost = [k for k in keep if _squash(k) not in out]
        left = [d for d in drop if _squash(d) in out]
        if lost or left:
            yield f"{name}: lost={lost} left={left}"


# -- opt-outs -----------------------------------------------------------------


def optout_cases() -> list[tuple[str, str, str, bool]]:
    """(name, language, text, is an opt-out) from tests/data/optout/*.tsv."""
    cases = []
    for path in sorted((DATA / "optout").glob("*.tsv")):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                name = f"{path.stem}:{row['text']}"
                cases.append((name, row["lang"], row["text"], row["label"] == "optout"))
    return cases


def optout_file_scores() -> dict[str, tuple[int, int, int]]:
    """Per corpus file: (true positives, false positives, false negatives)."""
    scores: dict[str, list[int]] = {}
    for name, _lang, text, wanted in optout_cases():
        got = is_opt_out(text)
        row = scores.setdefault(name.split(":")[0], [0, 0, 0])
        row[0] += got and wanted
        row[1] += got and not wanted
        row[2] += wanted and not got
    return {k: (v[0], v[1], v[2]) for k, v in scores.items()}


def optout_scores() -> dict[str, tuple[int, int, int]]:
    """Per split and per language: (true positives, false positives, false negatives)."""
    scores: dict[str, list[int]] = {}
    for name, lang, text, wanted in optout_cases():
        got = is_opt_out(text)
        part = split(name)
        for key in (part, f"{part}:{lang}", "all", f"all:{lang}"):
            row = scores.setdefault(key, [0, 0, 0])
            row[0] += got and wanted
            row[1] += got and not wanted
            row[2] += wanted and not got
    return {k: (v[0], v[1], v[2]) for k, v in scores.items()}


def sms_false_alarms() -> tuple[int, int, list[str]]:
    """Opt-outs (or opt-ins) found in real personal SMS that are not opt-outs."""
    lines = (DATA / "sms" / "ham.txt").read_text().splitlines()
    real = set((DATA / "sms" / "ham_optouts.txt").read_text().splitlines())
    alarms = [line for line in lines if line not in real and is_opt_out(line)]
    alarms += [line for line in lines if is_opt_in(line)]
    return len(alarms), len(lines), alarms


def optout_honest_rows() -> list[tuple[str, str, str]]:
    """The honest estimate (``bench/optout_loso.py``): each set's first run with the rules
    of the time, OR the scorer trained without that set; the scorer alone, leave one set
    out; the scorer's false alarms on the SMS, two-fold cross-fitted. About a minute."""
    import optout_loso

    table = {name: cells for name, _cut, *cells in optout_loso.rows()}
    rules, _scorer, combined = table["pooled first runs"]
    return [
        ("opt-out first runs: rules then, recall / precision", rules, ""),
        ("opt-out first runs: rules OR scorer (honest)", combined, ">= 0.90 at >= 0.97"),
        ("opt-out scorer alone, leave one set out", table["pooled"][1], ""),
        (
            "opt-out scorer false alarms, real SMS (cross-fitted)",
            table["real SMS false alarms"][2],
            "<= 1 per 5,000",
        ),
    ]


# -- addresses ----------------------------------------------------------------


def address_cases() -> list[dict[str, str]]:
    with (DATA / "addresses" / "phones.tsv").open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def address_scores() -> tuple[int, int, int]:
    """(cases, right, silently another number): an answer is right when it is the
    expected number, or a refusal where one is expected; a number that is not the
    expected one is the failure that matters (a message to a stranger)."""
    right = wrong = 0
    cases = address_cases()
    for case in cases:
        try:
            got: str | None = normalise_address(
                case["input"], case["region"] or "US", channel=case["channel"] or None
            ).value
        except InvalidInput:
            got = None
        expected = case["expected"] or None
        if got == expected:
            right += 1
        elif got is not None:
            wrong += 1
    return len(cases), right, wrong


# -- the table ----------------------------------------------------------------


def report() -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for split, (total, passed, kept) in reply_scores().items():
        rows.append((f"reply stripping, {split}", _ratio(passed, total), ">= 0.85"))
        rows.append((f"reply new text kept, {split}", _ratio(kept, total), ">= 0.98"))
    for corpus, cases in sorted(external_reply_cases().items()):
        passed = kept = 0
        for _name, body, keep, drop in cases:
            out = _squash(new_part(body))
            has = all(_squash(k) in out for k in keep)
            kept += has
            passed += has and not any(_squash(d) in out for d in drop)
        rows.append((f"reply stripping, unseen {corpus}", _ratio(passed, len(cases)), ">= 0.85"))
        rows.append((f"reply new text kept, unseen {corpus}", _ratio(kept, len(cases)), ">= 0.98"))
    scores = optout_scores()
    for part in ("dev", "held-out", "blind", "after-fixes", "after-round2", "after-round3"):
        tp, fp, fn = scores.get(part, (0, 0, 0))
        rows.append((f"opt-out recall, {part}", _ratio(tp, tp + fn), ">= 0.90"))
        rows.append((f"opt-out precision, {part}", _ratio(tp, tp + fp), ">= 0.97"))
    for corpus, (tp, fp, fn) in sorted(optout_file_scores().items()):
        figure = f"{_ratio(tp, tp + fn)} / {_ratio(tp, tp + fp)}"
        rows.append((f"opt-out {corpus} recall / precision", figure, ""))
    langs = sorted({key.split(":")[1] for key in scores if key.startswith("all:")})
    for lang in langs:
        tp, fp, fn = scores[f"all:{lang}"]
        figure = f"{_ratio(tp, tp + fn)} / {_ratio(tp, tp + fp)}"
        rows.append((f"opt-out {lang} recall / precision", figure, ""))
    for lang in langs:
        tp, fp, fn = scores.get(f"blind:{lang}", (0, 0, 0))
        figure = f"{_ratio(tp, tp + fn)} / {_ratio(tp, tp + fp)}"
        rows.append((f"opt-out blind {lang} recall / precision", figure, ""))
    alarms, total, _ = sms_false_alarms()
    rows.append(("opt-out false alarms, real SMS", f"{alarms} in {total}", "<= 1 per 5,000"))
    rows.extend(optout_honest_rows())
    total, right, wrong = address_scores()
    rows.append(("phone numbers read right", _ratio(right, total), ""))
    rows.append(("phone numbers silently turned into another", str(wrong), "0"))
    return rows


if __name__ == "__main__":
    if "--failures" in sys.argv:
        for line in reply_failures():
            print(line)
        for corpus, cases in external_reply_cases().items():
            for name, body, keep, drop in cases:
                out = _squash(new_part(body))
                lost = [k for k in keep if _squash(k) not in out]
                left = [d for d in drop if _squash(d) in out]
                if lost or left:
                    print(f"{corpus}/{name}: lost={lost} left={left}")
        for _name, lang, text, wanted in optout_cases():
            if is_opt_out(text) != wanted:
                print(f"optout {'missed' if wanted else 'false'} [{lang}] {text}")
        for line in sms_false_alarms()[2]:
            print(f"sms false alarm: {line}")
    for function, figure, target in report():
        print(f"{function:<45} {figure:<28} {target}")
