"""Representative cases from the corpora under tests/data (replies, opt-outs,
SMS, addresses): a regression in reading what people send fails here, and the
whole corpora must stay at their measured level (bench/accuracy_text.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from relay.channels.mail.text import new_part
from relay.core.errors import InvalidInput
from relay.core.optout import is_opt_in, is_opt_out
from relay.engine.contacts.addresses import normalise_address

BENCH = Path(__file__).resolve().parents[2] / "bench"
DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(BENCH))
import accuracy_text  # noqa: E402


def _reply(name: str) -> str:
    return new_part((DATA / "replies" / name).read_text("utf-8"))


@pytest.mark.parametrize(
    ("name", "kept", "gone"),
    [
        # Outlook's bold *From:* block
        ("github/email_2_1.txt", "Outlook with a reply", "Google Apps Sync Team"),
        # inline answers between the quotes all stay
        ("github/email_1_8.txt", "and under this.", "here's some stuff I can write"),
        # Dutch "Op ... schreef", split over two lines
        ("willdurand/email_8.txt", "Fusce bibendum", "schreef"),
        # Polish "W dniu ... napisał"
        ("willdurand/email_14.txt", "Fusce bibendum", "napisał"),
        # Norwegian "... skrev ... >:"
        ("willdurand/email_norwegian_gmail.txt", "Fusce bibendum", "Test user"),
        # French header block "De : ... Envoyé le : ..."
        ("willdurand/email_10.txt", "Fusce bibendum", "Envoy"),
        # Chinese header block
        ("willdurand/email_22.txt", "Fusce bibendum", "发送时间"),
        # Danish "-----Oprindelig meddelelse-----"
        ("mail-parser-reply/email_danish_4.txt", "Svar.", "Peter Petersen"),
        # Swedish attribution and a sign-off with a phone number
        ("mail-parser-reply/email_sv_anon_1.txt", "Berättar gärna.", "070-0000000"),
        # mailing-list footer
        ("github/email_1_1.txt", "Java HTTP API", "riak-users mailing list"),
        # mobile trailer, and a thread whose attribution spans three lines
        ("willdurand/email_thread.txt", "reply in thread from bellow", "John Doe"),
        ("github/email_iPhone.txt", "Here is another email", "Sent from my iPhone"),
    ],
)
def test_reply_fixtures(name: str, kept: str, gone: str) -> None:
    text = _reply(name)
    assert kept in text
    assert gone not in text


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Test reply\n\n---- John Smith wrote ----\n\n> quoted\n> text\n", "Test reply"),
        (
            "Hello\n\nVào 14:24 8 tháng 6, 2017, Hùng Nguyễn <hungnguyen@xxx.com> đã viết:\n\n"
            "> Xin chào\n",
            "Hello",
        ),
        (
            "Hello\n02.04.2012 14:20 пользователь \"bob@x.org\" <\nbob@x.org> написал:\n\n> Hi\n",
            "Hello",
        ),
        # "when unsure, keep it": "Something wrote:" has no date, it is the contact's text
        ("I think\n\nSomething wrote:\nmore of mine", "I think\n\nSomething wrote:\nmore of mine"),
        # "Sent from my desk, ..." is a sentence, not a trailer
        (
            "Here\n\nSent from my desk, is much easier.",
            "Here\n\nSent from my desk, is much easier.",
        ),
        # a closing followed by a long paragraph is not a signature
        ("Thanks\nThe contract is attached and I have a question about clause 4, can you call?",
         "Thanks\nThe contract is attached and I have a question about clause 4, can you call?"),
        ("Sounds good.\n\nMit freundlichen Grüßen\nAnna Schmidt\nACME GmbH", "Sounds good."),
    ],
)
def test_reply_rules(body: str, expected: str) -> None:
    assert new_part(body) == expected


def test_reply_corpus_stays_at_its_level() -> None:
    scores = accuracy_text.reply_scores()
    total = sum(s[0] for s in scores.values())
    passed = sum(s[1] for s in scores.values())
    kept = sum(s[2] for s in scores.values())
    assert passed / total >= 0.95
    assert kept / total >= 0.98


@pytest.mark.parametrize(
    "text",
    [
        "STOP", "Stop please", "STOP. Thank you", "Please stop sending me these messages",
        "unsubscribe me from all future emails", "Lose my number", "Remove me.",
        "Leave me alone", "u can stop now", "This is spam. Stop", "BAJA", "SAIR", "Abmelden",
        "Désabonnement", "Dejen de enviarme mensajes", "Não me envie mais mensagens",
        "Ne me contactez plus", "Schreiben Sie mir nicht mehr", "Non scrivetemi più",
        "Stuur me geen berichten meer", "\uff33\uff34\uff2f\uff30",
    ],
)  # fmt: skip
def test_opt_outs(text: str) -> None:
    assert is_opt_out(text)


@pytest.mark.parametrize(
    "text",
    [
        "Can you stop by tomorrow?", "don't stop sending me updates",
        "Stop! No way, that's amazing", "End of May works for me",
        "Don't call me before 10am, I'm on night shift", "I unsubscribed from Netflix lol",
        "No dejes de enviarme las novedades", "No me escribas antes de las 10",
        "Hören Sie nicht auf, mir die Neuigkeiten zu schicken", "Yup next stop.",
        "Remove me from the cc and add my colleague instead",
        # a quoted footer is history, and new_part removes it before this is asked
        "Let's start Monday",
    ],
)  # fmt: skip
def test_innocent_text(text: str) -> None:
    assert not is_opt_out(text)


def test_opt_in_is_the_keyword_alone() -> None:
    assert is_opt_in("START") and is_opt_in("Unstop please")
    assert not is_opt_in("Let's start on Monday")


def test_optout_corpus_and_real_sms() -> None:
    tp, fp, fn = accuracy_text.optout_scores()["all"]
    assert tp / (tp + fn) >= 0.9 and tp / (tp + fp) >= 0.97
    alarms, total, _ = accuracy_text.sms_false_alarms()
    assert total > 4000 and alarms * 5000 <= total


def test_phone_corpus_never_turns_a_number_into_another() -> None:
    total, right, wrong = accuracy_text.address_scores()
    assert wrong == 0 and right == total


def test_digits_with_a_country_code() -> None:
    with pytest.raises(InvalidInput, match=r"\+14930123456 .*\+4930123456"):
        normalise_address("4930123456", "US")
    assert normalise_address("4930123456", "US", channel="whatsapp").value == "+4930123456"
    assert normalise_address("4930123456", "US", international=True).value == "+4930123456"
    assert normalise_address("0049 30 123456", "US").value == "+4930123456"
    assert normalise_address("011 33 1 23 45 67 89", "US").value == "+33123456789"
    assert normalise_address("(415) 555-0100", "US").value == "+14155550100"


def test_name_and_address() -> None:
    address = normalise_address('"Lima, Ana" <Ana@X.com>')
    assert (address.value, address.name) == ("ana@x.com", "Lima, Ana")
    assert normalise_address("ana@x.com").name is None
