"""What an erased contact leaves behind: a keyed hash of each of its addresses.

``relay contact erase`` deletes everything held about a person and keeps, per
address, only ``HMAC-SHA256(key, address)``: enough to refuse the address when
a later ``start`` or ``import`` names it, and useless to anyone who reads the
store without the key (a plain hash of a phone number is reversed by trying
every number). The key comes from the environment variable that
``[compliance] erasure_key_env`` names, never from the store; its id (a hash of
the key, not the key) is kept beside each record so that a changed key is
noticed instead of silently letting erased people be contacted again.
"""

from __future__ import annotations

import hashlib
import hmac

#: The shortest key accepted: 16 bytes, as a hex or random text of that length.
MIN_KEY_LENGTH = 16


def address_hash(key: bytes, address: str) -> str:
    """The suppression record of one normalised address (64 hex digits)."""
    return hmac.new(key, address.strip().lower().encode("utf-8"), hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """Which key made a record: 16 hex digits derived from the key, not revealing it."""
    return hmac.new(key, b"relay erasure key id", hashlib.sha256).hexdigest()[:16]
