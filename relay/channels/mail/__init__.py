"""The pieces of the email channel, each testable on its own.

``outbound`` builds the MIME message (threading and unsubscribe headers),
``text`` turns a body into the new part of a reply, ``autoreply`` and
``bounces`` recognise mail that is not a person answering, ``parse`` turns
one raw email into what the channel contract carries, and ``imap`` polls a
mailbox from a cursor the store keeps. Heavy imports (imapclient) happen
inside the functions that need them.
"""
