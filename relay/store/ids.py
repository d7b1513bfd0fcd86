"""Short, typeable instance ids: no vowels-that-look-like-digits, no case."""

from __future__ import annotations

import secrets

ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
ID_LENGTH = 7


def new_instance_id() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(ID_LENGTH))
