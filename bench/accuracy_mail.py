"""How well relay reads bounces, complaints, delivery reports and auto-replies, on real mail.

Corpora (``tests/data/mail``, see its SOURCES.md): sisimai's set-of-emails
with the reason and "hard bounce" (is the address dead) that sisimai's own
tests expect, and flufl.bounce's samples with the failed addresses its tests
expect. Every mail goes through :func:`relay.channels.mail.reading.describe`,
the object ``relay inspect mail --json`` prints. The ``rhost-*`` samples of
sisimai (bounces as rewritten by big receiving providers) were held out while
the rules were written: their figures are shown apart.

Labels we dispute (``tests/data/mail/sisimai/disputed.json``, each with its
reason) are counted as labelled; a second row counts them as argued, so both
figures are visible. ``RELAY_MAIL_CORPORA`` (folders separated by ``:``) adds
corpora that are not committed: each folder holds mails and a ``labels.json``
``{file: {"kind": reply|bounce|delay|auto_reply|complaint|delivery_report,
"dead": true|false|null, "recipients": [...] and "feedback_type": "abuse" (both
optional)}}``;
their figures are shown apart, per folder.

    .venv/bin/python bench/text_accuracy.py        # every accuracy_*.py module
    .venv/bin/python bench/accuracy_mail.py -v     # this one, with every miss
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "mail"
#: sisimai reasons that are not failures: an auto-reply, a complaint, a success report.
NOT_BOUNCES = {"vacation": "auto_reply", "feedback": "complaint", "delivered": "delivery_report",
               "not-a-bounce": "reply"}


@dataclass
class Sample:
    corpus: str
    file: str
    raw: bytes
    truth: str  # reply | bounce | auto_reply | complaint | delivery_report
    dead: bool | None = None
    recipients: list[str] = field(default_factory=list)
    held_out: bool = False
    #: "is the address dead" as argued in disputed.json (None: the label is not disputed).
    argued: bool | None = None
    #: A corpus given by RELAY_MAIL_CORPORA: shown apart, like the held-out set.
    unseen: str = ""
    #: For a feedback report: its Feedback-Type as the label gives it (sisimai's "other").
    feedback_type: str = ""


def samples() -> list[Sample]:
    found = []
    labels = json.loads((DATA / "sisimai" / "labels.json").read_text())
    disputed = json.loads((DATA / "sisimai" / "disputed.json").read_text())
    for name, records in sorted(labels.items()):
        reason = records[0]["reason"]
        truth = NOT_BOUNCES.get(reason, "bounce")
        dead = records[0]["hard_bounce"] if truth == "bounce" else False
        argued = disputed[name]["dead"] if name in disputed else None
        feedback = str(records[0].get("other") or "") if reason == "feedback" else ""
        found.append(Sample("sisimai", name, (DATA / "sisimai" / name).read_bytes(), truth, dead,
                            held_out=name.startswith("rhost-"), argued=argued,
                            feedback_type=feedback))
    labels = json.loads((DATA / "flufl" / "labels.json").read_text())
    for name, label in sorted(labels.items()):
        truth = "delay" if label["temporary"] else "bounce"
        found.append(Sample("flufl", name, (DATA / "flufl" / name).read_bytes(), truth, None,
                            recipients=label["recipients"]))
    autoreplies = DATA / "autoreply"
    if autoreplies.is_dir():
        labels = json.loads((autoreplies / "labels.json").read_text())
        for name, label in sorted(labels.items()):
            found.append(Sample("autoreply", name, (autoreplies / name).read_bytes(),
                                label["kind"], False))
    return found + unseen_samples()


def unseen_samples() -> list[Sample]:
    """The corpora named by RELAY_MAIL_CORPORA (not committed; see the docstring)."""
    found = []
    for folder in filter(None, os.environ.get("RELAY_MAIL_CORPORA", "").split(":")):
        path = Path(folder)
        labels = json.loads((path / "labels.json").read_text())
        for name, label in sorted(labels.items()):
            found.append(Sample(path.name, name, (path / name).read_bytes(), label["kind"],
                                label.get("dead"), recipients=label.get("recipients", []),
                                unseen=path.name, feedback_type=label.get("feedback_type", "")))
    return found


def read(sample: Sample) -> dict[str, object]:
    from relay.channels.mail.reading import describe, read_mail

    return describe(read_mail(sample.raw), sample.file)


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.3f} ({hits}/{total})" if total else "n/a"


def figures(items: list[tuple[Sample, dict[str, object]]]) -> list[tuple[str, str, str]]:
    """(function, figure, target) rows for one set of samples."""
    rows = []
    failure = {"bounce", "delay"}

    def is_bounce(got: dict[str, object]) -> bool:
        return got["kind"] == "bounce" or (
            got["kind"] == "delivery_report" and bool(got.get("_delayed"))
        )

    tp = sum(1 for s, g in items if s.truth in failure and is_bounce(g))
    fp = sum(1 for s, g in items if s.truth not in failure and is_bounce(g))
    fn = sum(1 for s, g in items if s.truth in failure and not is_bounce(g))
    rows.append(("is it a bounce: precision", _ratio(tp, tp + fp), ">= 0.99"))
    rows.append(("is it a bounce: recall", _ratio(tp, tp + fn), ">= 0.95"))
    labelled = [(s, g) for s, g in items if s.dead is not None]
    marked = [(s, g) for s, g in labelled if g["bounce"] and g["bounce"]["permanent"]]  # type: ignore[index]
    dead = [s for s, _ in labelled if s.dead]
    right = sum(1 for s, _ in marked if s.dead)
    if labelled:
        rows.append(("undeliverable vs dead: precision", _ratio(right, len(marked)), ">= 0.95"))
        rows.append(("undeliverable vs dead: recall", _ratio(right, len(dead)), ">= 0.85"))
    if any(s.argued is not None for s, _ in labelled):
        argued = [s.dead if s.argued is None else s.argued for s, _ in labelled]
        right = sum(1 for (s, g), d in zip(labelled, argued, strict=True) if d and _marks(g))
        rows.append(("undeliverable vs dead, disputed labels as argued: precision",
                     _ratio(right, len(marked)), ">= 0.95"))
        rows.append(("undeliverable vs dead, disputed labels as argued: recall",
                     _ratio(right, sum(1 for d in argued if d)), ">= 0.85"))
    named = [(s, g) for s, g in items if s.recipients]
    if named:
        got = sum(1 for s, g in named if set(s.recipients) <= set(_recipients(g)))
        rows.append(("failed recipient found", _ratio(got, len(named)), ">= 0.92"))
    reports = [(s, g) for s, g in items if s.truth in {"complaint", "delivery_report"}]
    if reports:
        # An opt-out is processed, never answered: it does not reach the agent.
        leaked = sum(1 for _, g in reports if g["kind"] in {"reply", "auto_reply"}
                     and not g["opt_out"])
        rows.append(("complaints and delivery reports reaching the agent", str(leaked), "0"))
        # DMARC/SPF/DKIM failure reports (Feedback-Type: auth-failure, RFC 6591) and
        # "not spam" reports are feedback, but nobody asked to stop.
        neutral = {"auth-failure", "dmarc", "not-spam"}
        complaints = [(s, g) for s, g in reports
                      if s.truth == "complaint" and s.feedback_type not in neutral]
        # An unsubscribe sent by the contact's mail client (sisimai files it as feedback,
        # "opt-out") opts out as a reply; an abuse report opts out as a complaint.
        opted = sum(1 for _, g in complaints if g["opt_out"])
        rows.append(("complaints opting the contact out", _ratio(opted, len(complaints)), "all"))
        failures = [(s, g) for s, g in reports if s.feedback_type in neutral]
        if failures:
            wrong = sum(1 for _, g in failures if g["opt_out"])
            rows.append(("authentication-failure reports opting the contact out",
                         f"{wrong} of {len(failures)}", "0"))
    auto = [(s, g) for s, g in items if s.truth == "auto_reply"]
    said_auto = [(s, g) for s, g in items if g["kind"] == "auto_reply"]
    if auto or said_auto:
        right = sum(1 for s, _ in said_auto if s.truth == "auto_reply")
        rows.append(("auto-reply: precision", _ratio(right, len(said_auto)), "1.0"))
        rows.append(("auto-reply: recall", _ratio(right, len(auto)), ">= 0.95"))
    return rows


def _marks(got: dict[str, object]) -> bool:
    return bool(got["bounce"] and got["bounce"]["permanent"])  # type: ignore[index]


def _recipients(got: dict[str, object]) -> list[str]:
    bounce = got.get("bounce") or got.get("_report") or {}
    return list(bounce.get("recipients", []))  # type: ignore[union-attr]


def return_dates() -> list[tuple[str, str, str]]:
    """The return-date wordings (tests/data/mail/return_dates.json): share read right."""
    from relay.channels.mail.autoreply import return_date

    path = DATA / "return_dates.json"
    if not path.exists():
        return []
    cases = json.loads(path.read_text())
    right = 0
    for case in cases:
        received = datetime.fromisoformat(case["received"]).replace(tzinfo=UTC)
        got = return_date(case["text"], received, language=case["language"],
                          region=case.get("region"))
        if (got.date().isoformat() if got else None) == case["expected"]:
            right += 1
        elif VERBOSE:
            print(f"  return date: {case['text']!r} -> {got} (want {case['expected']})")
    languages = len({c["language"] for c in cases})
    return [(f"return date ({languages} languages)", _ratio(right, len(cases)), ">= 0.9")]


VERBOSE = False


def evaluated() -> list[tuple[Sample, dict[str, object]]]:
    from relay.channels.mail.reading import read_mail

    items = []
    for sample in samples():
        reading = read_mail(sample.raw)
        from relay.channels.mail.reading import describe

        got = describe(reading, sample.file)
        if reading.bounce is not None and reading.kind.value == "delivery_report":
            got["_delayed"] = reading.bounce.delayed
            got["_report"] = {"recipients": list(reading.bounce.recipients)}
        items.append((sample, got))
    return items


def report() -> list[tuple[str, str, str]]:
    """Rows for bench/text_accuracy.py: everything, then the held-out part alone."""
    items = evaluated()
    dev = [i for i in items if not i[0].held_out and not i[0].unseen]
    rows = [(f"mail: {f}", v, t) for f, v, t in figures(dev)]
    rows += [(f"mail (held out): {f}", v, t) for f, v, t in figures([i for i in items
                                                                      if i[0].held_out])]
    for name in sorted({s.unseen for s, _ in items if s.unseen}):
        rows += [(f"mail (unseen {name}): {f}", v, t)
                 for f, v, t in figures([i for i in items if i[0].unseen == name])]
    rows += [(f"mail: {f}", v, t) for f, v, t in return_dates()]
    return rows


def _misses(items: list[tuple[Sample, dict[str, object]]]) -> None:
    for s, g in items:
        bounce = g["bounce"] or {}
        problems = []
        failed = s.truth in {"bounce", "delay"}
        is_b = g["kind"] == "bounce" or g.get("_delayed")
        if failed != bool(is_b):
            problems.append(f"kind {g['kind']} want {s.truth}")
        if s.dead is not None and bool(bounce.get("permanent")) != s.dead:  # type: ignore[union-attr]
            problems.append(f"permanent {bounce.get('permanent')} want dead={s.dead} "  # type: ignore[union-attr]
                            f"({bounce.get('reason')} {bounce.get('status')})")  # type: ignore[union-attr]
        if s.recipients and not set(s.recipients) <= set(_recipients(g)):
            problems.append(f"recipients {_recipients(g)} want {s.recipients}")
        if problems:
            held = " (held out)" if s.held_out else ""
            print(f"  {s.corpus}/{s.file}{held}: {'; '.join(problems)}")


def main(argv: list[str]) -> int:
    global VERBOSE
    VERBOSE = "-v" in argv
    if VERBOSE:
        _misses([i for i in evaluated() if not (i[0].held_out or i[0].unseen) or "--held" in argv])
    for function, figure, target in report():
        print(f"{function:<68} {figure:<22} {target}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
