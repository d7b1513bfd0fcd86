"""The store's hot-path machinery, kept together and kept as it is.

The daemon's per-row writes and locks go through these four modules instead of
the ORM: :mod:`~relay.store.hotpath.prepared` builds claims and locks once per
dialect, :mod:`~relay.store.hotpath.locked_rows` reads and writes locked rows as
plain tuples, :mod:`~relay.store.hotpath.among` passes a batch's ids as one
parameter, and :mod:`~relay.store.hotpath.fast_writes` sends batch inserts and
updates below SQLAlchemy's per-row work. Together they measured +11 % throughput
on SQLite and +25 % on PostgreSQL (docs/performance-history.md); the nouns'
modules (contacts, instances, messages, ...) call into them, never the reverse.
"""
