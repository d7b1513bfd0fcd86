"""Moved: chat links are in :mod:`relay.engine.contacts.addresses` (the contact book).

Kept only while :mod:`relay.engine.inbound.ingest` still imports this name; it
goes once that import names ``addresses``."""

from relay.engine.contacts.addresses import bind, contact_for_arrival

__all__ = ["bind", "contact_for_arrival"]
