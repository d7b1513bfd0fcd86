"""SMS segment counting: carriers rate-limit and bill per segment, not per message.

A text that fits the GSM 03.38 alphabet goes as 7-bit characters (160 in one
segment, 153 per segment once it is split, the rest being the concatenation
header); one character outside it (an emoji, a curly quote, most non-Latin
scripts) makes the whole text UCS-2 (70, then 67 UTF-16 units per segment).
"""

from __future__ import annotations

import math

GSM_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
#: Characters that take an escape plus themselves: two septets each.
GSM_EXTENDED = frozenset("^{}\\[~]|€\f")


def is_gsm7(text: str) -> bool:
    return all(c in GSM_BASIC or c in GSM_EXTENDED for c in text)


def segment_count(text: str) -> int:
    """How many SMS segments ``text`` is sent as (at least one, even when empty)."""
    if is_gsm7(text):
        units = sum(2 if c in GSM_EXTENDED else 1 for c in text)
        single, multi = 160, 153
    else:
        units = len(text.encode("utf-16-le")) // 2
        single, multi = 70, 67
    if units <= single:
        return 1
    return math.ceil(units / multi)
