"""Real mail from other projects' test suites (tests/data/mail, see SOURCES.md): a
representative sample of each corpus is pinned, and the figures of
bench/accuracy_mail.py must not fall below what they are, so a regression fails CI."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from relay.channels.mail.reading import describe, read_mail

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "mail"

# (file, kind, reason, permanent, status, first recipient, return date, opt_out)
PINNED = [
    ('sisimai/lhost-postfix-04.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['kijitora@example.co.jp'], None, False),
    ('sisimai/lhost-postfix-06.eml', 'bounce',
     'host_unknown', True, '5.4.4', ['kijitora@neko.example.jp'], None, False),
    ('sisimai/lhost-exim-01.eml', 'bounce',
     'policy', False, '5.7.0', ['kijitora@example.ed.jp'], None, False),
    ('sisimai/lhost-qmail-01.eml', 'bounce',
     'user_unknown', True, '5.5.0', ['kijitora@example.ne.jp'], None, False),
    ('sisimai/lhost-dragonfly-01.eml', 'bounce',
     'authentication', False, '5.7.26', ['pseudo-local-part@google.example.com'], None, False),
    # "user unknown" answered after DATA (a transcript's ">>> DATA"): a filter, not a dead address
    ('sisimai/lhost-sendmail-19.eml', 'bounce',
     'policy', False, '5.2.0', ['kijitora@ntt.example.ne.jp'], None, False),
    # pipelined: the first answer after ">>> DATA" is the RCPT TO's, with 5.1.1: dead
    ('sisimai/lhost-sendmail-17.eml', 'bounce',
     'user_unknown', True, '5.1.6', ['kijitora@example.net'], None, False),
    # "5.2.1 ... User Unknown" not said at RCPT TO: the code says the mailbox is disabled
    ('sisimai/lhost-powermta-01.eml', 'bounce',
     'suspended', False, '5.2.1', ['kijitora@example.jp'], None, False),
    # "550 : User unknown", no recipient named: the carrier's filter
    ('sisimai/rfc3464-57.eml', 'bounce',
     'policy', False, '5.0.0', ['otsu-sakaba-hunter-neko-nyaaaaaaan@ezweb.ne.jp'], None, False),
    # a local delivery program's failure (x-unix), not an unknown user
    ('sisimai/lhost-postfix-01.eml', 'bounce',
     'other', False, '5.1.1', ['kijitora@example.org'], None, False),
    # "Refused due to recipient preferences" under 5.1.1
    ('sisimai/rhost-facebook-03.eml', 'bounce',
     'policy', False, '5.1.1', ['kijitora@facebook.com'], None, False),
    # Microsoft 365: "5.4.1 Recipient address rejected: Access denied" is an unknown recipient
    ('sisimai/lhost-postfix-30.eml', 'bounce',
     'user_unknown', True, '5.4.1', ['kijitora@example.br'], None, False),
    # Yahoo's "This user doesn't have a yahoo.com account", answered after DATA
    ('sisimai/lhost-sendmail-41.eml', 'bounce',
     'user_unknown', True, '5.0.0', ['this-local-part-does-not-exist@yahoo.com'], None, False),
    # Gmail's "Address not found" with no diagnostic code
    ('sisimai/rfc3464-65.eml', 'bounce',
     'user_unknown', True, '5.0.0', ['kijitora@example.it'], None, False),
    ('sisimai/lhost-mailru-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['kijitora@example.jp'], None, False),
    ('sisimai/lhost-gmail-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['userunknown@example.jp'], None, False),
    ('sisimai/lhost-yahoo-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['kijitora@example.org'], None, False),
    ('sisimai/lhost-exchange2007-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['mikeneko@example.co.jp'], None, False),
    ('sisimai/lhost-amazonses-09.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['bounce@simulator.amazonses.com'], None, False),
    ('sisimai/lhost-amazonses-11.eml', 'complaint',
     None, None, None, None, None, True),
    ('sisimai/lhost-amazonses-13.eml', 'delivery_report',
     None, None, None, None, None, False),
    ('sisimai/arf-01.eml', 'complaint',
     None, None, None, None, None, True),
    ('sisimai/arf-26.eml', 'reply',
     None, None, None, None, None, True),
    ('sisimai/rfc3834-01.eml', 'auto_reply',
     None, None, None, None, '2005-05-05', False),
    ('sisimai/rfc3464-28.eml', 'delivery_report',
     None, None, None, None, None, False),
    ('sisimai/lhost-sendmail-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['userunknown@bouncehammer.jp'], None, False),
    ('sisimai/lhost-exim-05.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['kijitora@neko.example.co.jp'], None, False),
    ('sisimai/lhost-postfix-08.eml', 'bounce',
     'expired', False, '4.4.1', ['kijitora@example.com'], None, False),
    ('sisimai/rhost-google-01.eml', 'bounce',
     'suspended', False, '5.2.1', ['shironeko@example.ne.jp'], None, False),
    ('sisimai/rhost-franceptt-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['pseudo-local-part-kijitora-nyaaan@orange.fr'], None, False),
    ('sisimai/lhost-courier-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['kijitora@example.co.jp'], None, False),
    ('sisimai/lhost-opensmtpd-01.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['apdugoaidugoaidugoaeiudggadi@gmail.com'], None, False),
    ('flufl/simple_03.txt', 'delivery_report',
     None, None, None, None, None, False),
    ('flufl/qmail_01.txt', 'bounce',
     'other', False, None, ['psadisc@wwwmail.n-h.de'], None, False),
    ('flufl/dsn_01.txt', 'bounce',
     'other', False, '5.0.0', ['jimmymcegypt@go.com'], None, False),
    ('flufl/dsn_17.txt', 'delivery_report',
     None, None, None, None, None, False),
    ('flufl/yahoo_01.txt', 'bounce',
     'expired', False, '4.4.1', ['subscribe.motorcycles@listsociety.com'], None, False),
    ('flufl/postfix_01.txt', 'bounce',
     'user_unknown', True, '5.1.1', ['xxxxx@local.ie'], None, False),
    ('flufl/exim_01.txt', 'bounce',
     'user_unknown', True, '5.1.1', ['delangen@its.tudelft.nl'], None, False),
    ('flufl/simple_38.txt', 'bounce',
     'user_unknown', True, None, ['foo@mail.ru'], None, False),
    ('flufl/newmailru_01.txt', 'bounce',
     'other', False, None, ['zzzzz@newmail.ru'], None, False),
    ('flufl/microsoft_02.txt', 'bounce',
     'user_unknown', True, None, ['mdmoore@ball.com'], None, False),
    # "#5.1.0 Address rejected": a status about the address with a bare refusal
    ('sisimai/rfc3464-51.eml', 'bounce',
     'user_unknown', True, '5.1.0', ['kijitora@example.de'], None, False),
    # Exim's wording for a null MX: "an MX or SRV record indicated no SMTP service"
    ('sisimai/lhost-mailru-05.eml', 'bounce',
     'host_unknown', True, None, ['neko@libsisimai.org'], None, False),
    # null MX reported by Gmail with 4.0.0: the domain takes no mail at all
    ('sisimai/rfc3464-52.eml', 'bounce',
     'host_unknown', True, '4.0.0', ['neko@libsisimai.org'], None, False),
    # "DNS lookup failure: host X not found"
    ('sisimai/lhost-dragonfly-04.eml', 'bounce',
     'host_unknown', True, None, [], None, False),
    # "554 ... Service unavailable" says nothing; the local agent's "unknown user" above does
    ('sisimai/rfc3464-06.eml', 'bounce',
     'user_unknown', True, '5.5.0', ['kijitora@example.net'], None, False),
    # a Japanese carrier's "mail error notice": the mailbox is full
    ('sisimai/lhost-kddi-01.eml', 'bounce',
     'mailbox_full', False, None, ['kijitora@x0000000000000.dion.ne.jp'], None, False),
    # a postmaster's "automatic bounce notification" sisimai files under "not" (disputed)
    ('sisimai/not-rb-issue-368-bug.eml', 'bounce',
     'mailbox_full', False, None, ['xxxx@yyyyyy.net'], None, False),
    # a MIME boundary the body never uses: read as one text
    ('sisimai/rhost-google-02.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['neko-nyaan@example.org'], None, False),
    # an SES notification whose JSON holds a raw line break
    ('sisimai/lhost-amazonses-10.eml', 'bounce',
     'user_unknown', True, '5.1.1', ['bounce@simulator.amazonses.com'], None, False),
    # post_master@, subject "Re:...", "no such user here": a bounce all the same
    ('sisimai/lhost-verizon-02.eml', 'bounce',
     'user_unknown', True, None, ['may-be-straycat-nyaaaaaan@vtext.com'], None, False),
    # after DATA, "553 <our sender's domain> does not exist": about us (label disputed)
    ('sisimai/lhost-exim-37.eml', 'bounce',
     'policy', False, None, ['kijitora@example.net'], None, False),
    # a permanent "Malformed or unexpected name server reply": the domain's DNS, fixable
    ('sisimai/lhost-postfix-17.eml', 'bounce',
     'expired', False, '5.4.4', ['kijitora@example.org'], None, False),
    # a delay warning naming "No MX found": not a failure yet (label disputed)
    ('sisimai/lhost-opensmtpd-12.eml', 'delivery_report',
     None, None, None, None, None, False),
    ('autoreply/zammad-ms-1.eml', 'auto_reply',
     None, None, None, None, None, False),
    ('autoreply/zammad-ms-followup.eml', 'reply',
     None, None, None, None, None, False),
    ('autoreply/zammad-zimbra-1.eml', 'auto_reply',
     None, None, None, None, None, False),
    ('autoreply/zammad-cloud-1.eml', 'auto_reply',
     None, None, None, None, None, False),
]


@pytest.mark.parametrize("row", PINNED, ids=[r[0] for r in PINNED])
def test_pinned_samples(row: tuple[Any, ...]) -> None:
    path, kind, reason, permanent, status, recipients, return_date, opt_out = row
    got = describe(read_mail((DATA / path).read_bytes()), path)
    bounce = got["bounce"] or {}
    assert got["kind"] == kind
    assert bounce.get("reason") == reason
    assert bounce.get("permanent") == permanent
    assert bounce.get("status") == status
    assert (bounce["recipients"][:1] if bounce else None) == recipients
    assert (got["auto_reply"] or {}).get("return_date") == return_date
    assert got["opt_out"] is opt_out


#: Floors under the bench's figures (what they are as this is written, rounded down).
FLOORS = {
    "mail: is it a bounce: precision": 0.99,
    "mail: is it a bounce: recall": 0.99,
    "mail: undeliverable vs dead: precision": 0.87,
    "mail: undeliverable vs dead: recall": 0.95,
    "mail: undeliverable vs dead, disputed labels as argued: precision": 1.0,
    "mail: undeliverable vs dead, disputed labels as argued: recall": 0.98,
    "mail: failed recipient found": 0.97,
    "mail: complaints opting the contact out": 1.0,
    "mail: auto-reply: precision": 1.0,
    "mail: auto-reply: recall": 0.95,
    "mail: return date (8 languages)": 0.95,
    "mail (held out): is it a bounce: recall": 0.98,
    "mail (held out): undeliverable vs dead: precision": 0.91,
    "mail (held out): undeliverable vs dead: recall": 0.91,
    "mail (held out): undeliverable vs dead, disputed labels as argued: precision": 1.0,
}


def test_every_disputed_label_names_its_reason_and_relay_decides_as_argued() -> None:
    """tests/data/mail/sisimai/disputed.json: each label we dispute says why, and relay's
    decision is the argued one (a change of rule that flips one shows up here)."""
    disputed = json.loads((DATA / "sisimai" / "disputed.json").read_text())
    labels = json.loads((DATA / "sisimai" / "labels.json").read_text())
    for name, entry in disputed.items():
        assert name in labels and len(entry["why"]) > 40, name
        got = describe(read_mail((DATA / "sisimai" / name).read_bytes()), name)
        assert bool(got["bounce"] and got["bounce"]["permanent"]) is entry["dead"], name


def test_the_figures_stay_above_their_floors() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import accuracy_mail

    figures = {name: value for name, value, _ in accuracy_mail.report()}
    for name, floor in FLOORS.items():
        found = re.match(r"[0-9.]+", figures[name])
        assert found is not None and float(found.group(0)) >= floor, (name, figures[name])
    assert figures["mail: complaints and delivery reports reaching the agent"] == "0"
