"""The contacts wing: who a conversation is with. Addresses, the contact book (find or
create a row), opt-out/opt-in, chat links and unsubscribe links.

Entry: :mod:`.addresses` (``normalise_address``) and :mod:`.book`.
"""
