"""``mask_text`` skips lines that cannot hold a secret: the same result as
running every pattern on every line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from relay.core.secrets import _HEADER, _QUERY, _USERINFO, MASK, mask_text

PIECES = st.sampled_from(
    [
        "https://",
        "postgresql://u:",
        "pw@h/db",
        "?token=",
        "&api_key=",
        "Authorization: Bearer ",
        "=",
        ":",
        "@",
        "/",
        " ",
        "x",
    ]
)


def _always(text: str) -> str:
    text = _HEADER.sub(lambda m: m.group("head") + MASK, text)
    text = _USERINFO.sub(lambda m: m.group("head") + MASK + "@", text)
    return _QUERY.sub(lambda m: m.group("head") + MASK, text)


@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=12).map("".join))
def test_the_shortcut_changes_nothing(text: str) -> None:
    assert mask_text(text) == _always(text)


def test_a_line_with_a_secret_is_still_masked() -> None:
    assert mask_text("sent to https://h/x?token=abc") == "sent to https://h/x?token=***"
    assert mask_text("instance k7: WAITING -> DONE") == "instance k7: WAITING -> DONE"
