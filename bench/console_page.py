"""How long the web console takes to serve a filtered page of conversations on a
large store, beside ``relay list --json`` with the same filter, in the same run.

Seeds ``--size`` conversations with ``bulk.clone`` (one real conversation cloned
in SQL; 100,000 build in about 3 s on SQLite, 1,000,000 in under a minute),
spread over campaigns of 10,000 each (the issue's "list of 10,000 conversations, filtered";
ten at 100k, a hundred at 1M) and four states. Then, interleaved run by run:

- the console's pages through the real app in process (Starlette's test client:
  routing, the session check, the SQL, the template), signed in: campaign c2
  page 1, its page 50 (a deep offset), campaign c2 in one state, campaign c2
  with a text filter, campaign c2 sorted by last change, the unfiltered first
  page, everything sorted by last change, and Needs a person (one state, the
  longest-waiting first);
- ``relay list --campaign c2 --json`` (50 rows, the same page size) as a fresh
  process, and ``Relay.instances(campaign="c2")`` in process.

Reports medians and the ratio console page / ``relay list --json``, and which
pages' SQL sorts rows instead of reading them in index order (``--plans``
prints each page's plan: ``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN`` on
PostgreSQL).

    python bench/console_page.py [--size 100000] [--runs 7] [--database URL] [--plans]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from typing import Any

import bulk
from benchlib import emit, machine, throwaway_store
from cli_latency import compile_relay, timed
from sqlalchemy import text

TOKEN = "bench-operator-token-0123456789"
STATES = "CASE seq % 4 WHEN 0 THEN 'WAITING_FOR_REPLY' WHEN 1 THEN 'COMPLETED' " \
    "WHEN 2 THEN 'NEEDS_HUMAN_INTERVENTION' ELSE 'ABANDONED' END"  # fmt: skip


def campaigns_for(size: int) -> int:
    """Campaigns of 10,000 conversations each (at least one)."""
    return max(1, size // 10_000)


def seed(bench: Any, size: int) -> float:
    started = time.monotonic()
    relay = bench.relay()
    template = bulk.make_template(relay)
    bulk.clone(relay, template, size - 1, tag="p", state="COMPLETED")
    with relay.store.engine.begin() as conn:
        # contact_slot stays NULL: the spread is for reading, not a live store's rules.
        conn.execute(text(
            f"UPDATE instances SET campaign = 'c' || (seq % {campaigns_for(size)}), "
            f"state = {STATES}, "
            "objective = CASE WHEN seq % 7 = 0 THEN 'renewal of the plan' "
            "ELSE objective END"))  # fmt: skip
    if relay.store.engine.dialect.name == "postgresql":
        with relay.store.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    relay.store.dispose()
    return round(time.monotonic() - started, 1)


def drop(bench: Any, names: list[str]) -> None:
    from relay.store.database import make_engine

    engine = make_engine(bench.url)
    with engine.begin() as conn:
        for name in names:
            conn.execute(text(f"DROP INDEX {name}"))
        if names and engine.dialect.name == "postgresql":
            conn.execute(text("ANALYZE instances"))
    engine.dispose()


PAGES = {
    "page_c2_s": "/ui/?campaign=c2",
    "page_c2_deep_s": "/ui/?campaign=c2&page=50",
    "page_c2_state_s": "/ui/?campaign=c2&state=NEEDS_HUMAN_INTERVENTION",
    "page_c2_text_s": "/ui/?campaign=c2&q=renewal",
    "page_c2_updated_s": "/ui/?campaign=c2&sort=updated",
    "page_all_s": "/ui/",
    "page_all_updated_s": "/ui/?sort=updated",
    "needs_s": "/ui/needs",
}


def console_client(bench: Any) -> tuple[Any, Any]:
    """The real app in process, signed in as an operator."""
    import re

    from starlette.testclient import TestClient

    from relay.api import Relay
    from relay.config import load_config
    from relay.runner.serve import build_app

    os.environ["BENCH_CONSOLE_TOKEN"] = TOKEN
    overrides = {"database.url": bench.url, "console.enabled": True,
                 "console.operator_token_env": "BENCH_CONSOLE_TOKEN"}  # fmt: skip
    config = load_config(overrides=overrides)
    relay = Relay.open(config)
    client = TestClient(build_app(relay), base_url="http://127.0.0.1")
    page = client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf
    answer = client.post("/ui/login", data={"csrf": csrf.group(1), "token": TOKEN},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303, answer.text
    return client, relay


def timed_page(client: Any, path: str) -> float:
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200 or 'data-id="' not in answer.text:
        raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
    return elapsed


def plans(client: Any, relay: Any) -> dict[str, str]:
    """Each page's plan for its page of conversations (the statement that joins
    instances to contacts), explained with the parameters it ran with."""
    from query_plans import explain
    from sqlalchemy import event

    found: dict[str, str] = {}
    for key, path in PAGES.items():
        seen: list[tuple[str, Any]] = []

        def grab(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
            if "JOIN contacts" in statement and "LIMIT" in statement.upper():
                seen.append((statement, params))  # noqa: B023 (read before the next page)

        event.listen(relay.store.engine, "before_cursor_execute", grab)
        try:
            timed_page(client, path)
        finally:
            event.remove(relay.store.engine, "before_cursor_execute", grab)
        found[key] = explain(relay, *seen[0])
    return found


def sorts(plan: str) -> bool:
    """The plan sorts the matching rows (no index hands them over in order)."""
    return "TEMP B-TREE FOR ORDER BY" in plan or bool(re.search(r"^\s*(->\s*)?Sort\b", plan, re.M))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--database", default=None, help="PostgreSQL server URL (default SQLite)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--plans", action="store_true", help="print each page's query plan")
    parser.add_argument("--drop-index", action="append", default=[], metavar="NAME",
                        help="drop this index after seeding: the same run without it")  # fmt: skip
    args = parser.parse_args()
    per_campaign = args.size // campaigns_for(args.size)
    figures: dict[str, Any] = {"size": args.size, "per_campaign": per_campaign}
    with throwaway_store(args.database) as bench:
        figures["seed_s"] = seed(bench, args.size)
        drop(bench, args.drop_index)
        figures["dropped"] = args.drop_index
        compile_relay()
        client, relay = console_client(bench)
        cli = [sys.executable, "-m", "relay", "--database", bench.url,
               "list", "--campaign", "c2", "--limit", "50", "--json"]  # fmt: skip
        times: dict[str, list[float]] = {k: [] for k in [*PAGES, "cli_list_s", "api_list_s"]}
        for path in PAGES.values():
            timed_page(client, path)  # warm: the first request loads templates and modules
        explained = plans(client, relay)
        figures["sorted_in_memory"] = [k for k, plan in explained.items() if sorts(plan)]
        if args.plans:
            for key, plan in explained.items():
                print(f"-- {PAGES[key]}\n{plan}\n", file=sys.stderr)
        for _ in range(args.runs):  # interleaved: a busy moment hits every figure alike
            for key, path in PAGES.items():
                times[key].append(timed_page(client, path))
            times["cli_list_s"].append(timed(cli))
            began = time.perf_counter()
            relay.instances(campaign="c2", limit=50)
            times["api_list_s"].append(time.perf_counter() - began)
        client.close()
        relay.close()
    figures.update({k: round(statistics.median(v), 4) for k, v in times.items()})
    cli_s = figures["cli_list_s"]
    figures["page_over_cli_list"] = round(figures["page_c2_s"] / cli_s, 3)
    figures["page_over_api_list"] = round(figures["page_c2_s"] / figures["api_list_s"], 2)
    table = [("store", f"{args.size:,} conversations, {per_campaign:,} in campaign c2 "
              f"(seeded in {figures['seed_s']} s)")]  # fmt: skip
    if args.drop_index:
        table.append(("indexes dropped", ", ".join(args.drop_index)))
    for key in PAGES:
        table.append((f"console {PAGES[key]}", f"{figures[key] * 1000:.1f} ms"))
    table.append(("relay list --campaign c2 --json (process)", f"{cli_s * 1000:.1f} ms"))
    table.append(("Relay.instances(campaign=c2) (in process)",
                  f"{figures['api_list_s'] * 1000:.1f} ms"))  # fmt: skip
    table.append(("console page / relay list --json", f"{figures['page_over_cli_list']:.2f}"))
    table.append(("pages whose SQL sorts the matching rows",
                  ", ".join(PAGES[k] for k in figures["sorted_in_memory"]) or "none"))  # fmt: skip
    figures["machine"] = machine()
    table.append(("machine", figures["machine"]))
    emit(figures, args.json, table)
    return 0


if __name__ == "__main__":
    os.environ.pop("RELAY_CONFIG", None)
    sys.exit(main())
