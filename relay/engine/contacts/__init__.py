"""The contacts wing: who a conversation is with. Addresses and the contact book (find
or create a row, its other addresses), opt-out/opt-in, chat links and unsubscribe links.

Entry: :mod:`.addresses` (``normalise_address``, ``find_or_create``).
"""
