"""How long ``relay db upgrade`` takes on a large store: the last revision undone
and done again on ``--stored`` conversations (bulk-cloned, see ``bulk.py``).

    python bench/migration_time.py --stored 1000000
    python bench/migration_time.py --stored 1000000 --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import bulk
from alembic.script import ScriptDirectory
from benchlib import throwaway_store

from relay.store import migrate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--stored", type=int, default=1_000_000, help="conversations")
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        relay = bench.relay()
        bulk.clone(relay, bulk.make_template(relay), args.stored, tag="c", state="COMPLETED")
        head = migrate.head_revision(relay.store)
        script = ScriptDirectory.from_config(migrate.alembic_config(relay.store))
        previous = script.get_revision(head).down_revision
        migrate.downgrade(relay.store, str(previous))
        started = time.perf_counter()
        migrate.upgrade(relay.store)
        seconds = time.perf_counter() - started
        dialect = relay.store.dialect
        relay.store.dispose()
    print(f"{dialect}, {args.stored:,} conversations: upgrade {previous} -> {head} "
          f"in {seconds:.2f} s")
    print(json.dumps({"database": dialect, "stored": args.stored, "from": previous, "to": head,
                      "seconds": round(seconds, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
