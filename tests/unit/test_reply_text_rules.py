"""Reply-text rules found on a reply corpus relay had not seen (issue 26), in our own
words: a sentence that starts like a closing is text, an attribution wrapped over two
lines right after a sentence is still found, Ukrainian "пише:" is an attribution."""

from __future__ import annotations

from relay.channels.mail.text import new_part


def test_a_sentence_that_starts_like_a_closing_is_kept() -> None:
    body = "Hi Sam,\nThank you for your reply.\n\n> your earlier mail\n"
    assert new_part(body) == "Hi Sam,\nThank you for your reply."


def test_a_closing_and_its_signature_still_go() -> None:
    body = "The call works for me.\n\nThanks,\nAna Lima\n\n> your earlier mail\n"
    assert new_part(body) == "The call works for me."


def test_a_closing_with_a_few_words_still_closes() -> None:
    assert new_part("See you Monday.\n\nThanks again!\nAna\n") == "See you Monday."


def test_an_attribution_wrapped_right_after_a_sentence_with_an_at_mention() -> None:
    body = (
        "The idea from @piet might be it. I can only test\n"
        "this in two weeks, I will let you know then...\n"
        'Op 16 aug. 2014 05:13 schreef "Sam" <sam@ours.example> het\n'
        "volgende geschreven:\n\n"
        "> Could this be an ad blocker?\n"
    )
    assert new_part(body) == (
        "The idea from @piet might be it. I can only test\n"
        "this in two weeks, I will let you know then..."
    )


def test_ukrainian_attribution() -> None:
    body = 'Дякую ще раз.\n\n30 серп. 2016 р. 20:45 "Sam" <sam@ours.example> пише:\n\n> Привіт\n'  # noqa: RUF001
    assert new_part(body) == "Дякую ще раз."


def test_a_banner_with_arrows_both_ways_is_not_a_quote() -> None:
    body = "Call us today.\n>>> https://www.example.com <<<\nThe link is above.\n"
    assert new_part(body) == body.strip()


def test_a_quoted_line_is_still_a_quote() -> None:
    assert new_part("Yes, Tuesday.\n\n> Can we meet Tuesday? <b>\n") == "Yes, Tuesday."


def test_every_split_keeps_the_new_text() -> None:
    """bench/accuracy_text.py per split (dev, held-out, unseen): new text kept >= 0.98."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench import accuracy_text

    for split, (total, passed, kept) in accuracy_text.reply_scores().items():
        assert kept / total >= 0.98, split
        assert passed / total >= 0.95, split
