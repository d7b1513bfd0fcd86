"""Reply stripping and HTML conversion on replies written the way real mail clients write them."""

from __future__ import annotations

import pytest

from relay.channels.mail.text import html_to_text, new_part

GMAIL = """Thursday works for me, 10am please.

On Mon, 3 Mar 2025 at 09:12, Ana from Depot <sales@example.org> wrote:
> Hi Alice, which day suits you for the delivery?
> Reply STOP to stop these emails.
>
> Ana
"""

GMAIL_WRAPPED = """Thursday works.

On Mon, Mar 3, 2025 at 9:12 AM Ana from the Depot of Somewhere Far <
sales@example.org> wrote:

> Hi Alice, which day suits you?
"""

OUTLOOK = """Yes, the address is right.

________________________________
From: Ana <sales@example.org>
Sent: Monday, March 3, 2025 9:12 AM
To: Bob Smith <bob@example.com>
Subject: Delivery of order 1042

Hi Bob, is 12 Harbour Street right? Reply STOP to opt out.
"""

OUTLOOK_ORIGINAL = """Morning is better.

-----Original Message-----
From: Ana <sales@example.org>
Sent: Monday, March 3, 2025 9:12 AM
To: Bob
Subject: RE: Delivery

Morning or afternoon?
"""

APPLE = """Sounds good, see you then.

Sent from my iPhone

> On 3 Mar 2025, at 09:12, Ana <sales@example.org> wrote:
>
> Hi, which day?
"""

SIGNATURE = """Tuesday is fine.

--\x20
Carol Jones
ACME Corp | +1 555 0100
"""

GERMAN = """Donnerstag passt.

Am Mo., 3. März 2025 um 09:12 Uhr schrieb Ana <sales@example.org>:
> Welcher Tag passt Ihnen?
"""

FRENCH = """Jeudi me convient.

Le lun. 3 mars 2025 à 09:12, Ana <sales@example.org> a écrit :
> Quel jour vous convient ?
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (GMAIL, "Thursday works for me, 10am please."),
        (GMAIL_WRAPPED, "Thursday works."),
        (OUTLOOK, "Yes, the address is right."),
        (OUTLOOK_ORIGINAL, "Morning is better."),
        (APPLE, "Sounds good, see you then."),
        (SIGNATURE, "Tuesday is fine."),
        (GERMAN, "Donnerstag passt."),
        (FRENCH, "Jeudi me convient."),
        ("Just this.\r\n", "Just this."),
    ],
    ids=["gmail", "gmail-wrapped", "outlook", "outlook-orig", "apple", "sig", "de", "fr", "crlf"],
)
def test_only_the_new_part_is_kept(body, expected):
    assert new_part(body) == expected


def test_a_reply_that_is_only_quoted_history_keeps_its_unquoted_lines():
    assert new_part("> an old line\nSee above.\n> more\n") == "See above."


def test_stop_in_the_quoted_part_is_gone_stop_in_the_new_part_stays():
    assert "STOP" not in new_part(GMAIL)
    assert new_part("STOP\n\n" + GMAIL.split("\n", 2)[2]).startswith("STOP")


def test_html_becomes_text_and_blockquotes_are_quoted():
    html = (
        "<html><head><style>p{color:red}</style></head><body>"
        "<div dir='ltr'>Thursday works.<br>Thanks, Alice</div>"
        "<div class='gmail_quote'><div>On Mon, 3 Mar 2025 at 09:12, Ana wrote:</div>"
        "<blockquote><p>Which day&nbsp;suits you? Reply STOP to opt out.</p></blockquote></div>"
        "</body></html>"
    )
    text = html_to_text(html)
    assert text.startswith("Thursday works.\nThanks, Alice")
    assert "> Which day\xa0suits you?" in text or "> Which day suits you?" in text
    assert "color" not in text
    assert new_part(text) == "Thursday works."  # the closing and name are the signature
