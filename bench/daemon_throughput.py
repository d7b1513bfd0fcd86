"""Follow-ups per second from real ``relay daemon`` processes, with the raw-sqlite reference.

A store of ``--stored`` conversations (bulk-cloned, see ``bulk.py``) of which
``--due`` wait for a reply; ``--daemons`` ``relay daemon`` subprocesses (scripted
agent, console channel writing JSONL) start, and once each has pulsed the
``--due`` heartbeats are made due at once; the daemons work until every one of
them has its follow-up delivered. The poller only reads (a ``mode=ro`` SQLite
connection, autocommit SELECTs on PostgreSQL).

The rate is ``due`` over the daemons' own time stamps: from the first
``heartbeat_fires`` transition to the last follow-up's ``sent_at``. CPU per
follow-up is the daemons' from the moment the work was made due to the last
send (their start-up excluded: four daemons starting on two cores would
otherwise spend about a second of CPU inside the span); the machine's busy
cores and, on PostgreSQL, the server's CPU per follow-up are taken over the
same span. Lateness is each follow-up's ``sent_at`` minus the first heartbeat
firing (all fall due at once: the p99 of a burst).

Issue 31's fixed reference, printed in every run: raw ``sqlite3`` doing one
UPDATE and two INSERTs per follow-up into three small unindexed tables of a file
of its own (100 per transaction, WAL, ``synchronous=NORMAL``,
``reference_small``); the daemon's CPU per follow-up over its CPU per follow-up
is the figure issue 31 sets (<= 50x).

On SQLite two more references: raw ``sqlite3`` doing the writes a follow-up needs
at minimum (an UPDATE of the instance and two INSERTs, a message and a state
change; transactions of 100) into relay's own tables on the same file, same
pragmas, just after the daemons; and every row write relay does for a follow-up
(8 statements in relay's 3 transactions, see ``reference_sqlite_full``): the
database's share of relay's cost, with nothing decided in Python.

    python bench/daemon_throughput.py --due 5000 --no-reference   # issue 31: over the reference
    python bench/daemon_throughput.py --due 10000
    python bench/daemon_throughput.py --daemons 4 \
        --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import bulk
from benchlib import (
    ReadOnly,
    cpu_seconds,
    emit,
    machine,
    machine_cpu,
    peak_rss_mb,
    percentile,
    start_daemon,
    stop,
    throwaway_store,
    wait_for,
)
from sqlalchemy import update

from relay.store.tables import instances

#: Seconds without a follow-up sent after which a run is given up.
STALL_SECONDS = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--due", type=int, default=10_000, help="follow-ups due at once")
    parser.add_argument("--stored", type=int, default=0,
                        help="extra ended conversations in the store (its size)")
    parser.add_argument("--daemons", type=int, default=1)
    parser.add_argument("--batch", type=int, help="daemon.batch (default: relay's)")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--max-seconds", type=float,
                        help="stop the daemons after this long (for peak RSS on a big backlog)")
    parser.add_argument("--idle", type=float, default=0,
                        help="then measure the daemons' CPU for this many seconds with nothing due")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.daemons > 1 and not args.database:
        parser.error("several daemons need a PostgreSQL --database: relay refuses a "
                     "second daemon on one SQLite file")
    with throwaway_store(args.database) as bench:
        figures = run(bench, args)
    figures["machine"] = machine()
    table = [
        ("database / daemons", f"{figures['database']} / {args.daemons}"),
        ("stored / due", f"{figures['stored']:,} / {args.due:,}"),
        ("follow-ups/s (daemon time stamps)", f"{figures['per_second']:,.0f}"),
        ("burst lateness p50 / p99 (s)",
         f"{figures['lateness_p50_s']:.2f} / {figures['lateness_p99_s']:.2f}"),
        ("daemon peak RSS (MB)", f"{figures['peak_rss_mb']:.0f}"),
        ("daemon CPU ms per follow-up", f"{figures['cpu_ms_per_followup']:.3f}"),
    ]
    table.append(("fixed raw reference CPU ms per follow-up (issue 31)",
                  f"{figures['small_reference_cpu_ms_per_followup']:.4f}"))
    table.append(("daemon CPU over the fixed reference",
                  f"{figures['cpu_ratio_to_small_reference']:.1f}x"))
    if "server_cpu_ms_per_followup" in figures:
        table.append(("server CPU ms per follow-up",
                      f"{figures['server_cpu_ms_per_followup']:.3f}"))
    if "machine_busy_cores" in figures:
        table.append((f"machine cores busy (of {os.cpu_count()})",
                      f"{figures['machine_busy_cores']:.2f}"))
    if "idle_cpu_percent" in figures:
        table.append(("idle daemon CPU (% of a core)", f"{figures['idle_cpu_percent']:.1f}"))
    if "reference_sqlite_per_s" in figures:
        table.append(("reference raw sqlite3 /s", f"{figures['reference_sqlite_per_s']:,.0f}"))
        table.append(("ratio", f"{figures['per_second'] / figures['reference_sqlite_per_s']:.2f}"))
        table.append(("reference CPU ms per follow-up",
                      f"{figures['reference_cpu_ms_per_followup']:.3f}"))
        full = figures["reference_full_sqlite_per_s"]
        table.append(("relay's write set, raw sqlite3 /s", f"{full:,.0f}"))
        table.append(("ratio to it", f"{figures['per_second'] / full:.2f}"))
        table.append(("its CPU ms per follow-up",
                      f"{figures['reference_full_cpu_ms_per_followup']:.3f}"))
    emit(figures, args.json, table)
    return 0


def seed(bench: Any, args: argparse.Namespace) -> tuple[Any, dict[str, datetime]]:
    relay = bench.relay()
    template = bulk.make_template(relay)
    if args.stored:
        bulk.clone(relay, template, args.stored, tag="c", state="COMPLETED")
    # Parked a day away until the daemons are up (see release); the template's own
    # heartbeat is a day away too and plays no part.
    parked = datetime.now(UTC) + timedelta(days=1)
    bulk.clone(relay, template, args.due, tag="w", heartbeat_at=parked)
    if relay.store.dialect == "postgresql":
        bulk.analyze(relay)  # autovacuum's job on a server; see docs/performance-history.md
    relay.store.dispose()
    return relay, {"due_at": parked}


def release(relay: Any, reader: ReadOnly, daemons: list[Any]) -> datetime:
    """Once every daemon has pulsed (imports, store, scheduler: about 0.3 s of CPU
    each, which on two cores four starting daemons would spend inside the measured
    span), make the parked heartbeats due at once, a minute ago."""
    wait_for(lambda: (reader.scalar("SELECT count(*) FROM daemons WHERE last_pulse_at IS NOT NULL")
                      or 0) >= len(daemons),
             timeout=60, every=0.1, alive=lambda: all(d.poll() is None for d in daemons))
    due_at = datetime.now(UTC) - timedelta(minutes=1)
    with relay.store.engine.begin() as conn:
        conn.execute(update(instances).where(instances.c.id.like("w%"))
                     .values(next_heartbeat_at=due_at))
    return due_at


def run(bench: Any, args: argparse.Namespace) -> dict[str, Any]:
    relay, info = seed(bench, args)
    reader = ReadOnly(bench.url)
    first_id = reader.scalar("SELECT max(id) FROM messages")
    settings: dict[str, Any] = {}
    if args.batch:
        settings["daemon.batch"] = args.batch
    daemons = [start_daemon(bench, f"d{i}", **settings) for i in range(args.daemons)]
    peaks = [0.0] * len(daemons)
    info["due_at"] = release(relay, reader, daemons)
    cpu_before = machine_cpu()
    cpu_before["daemons"] = sum(cpu_seconds(d.pid) for d in daemons)
    started = time.monotonic()

    progress = {"sent": -1, "at": time.monotonic()}

    def done() -> bool:
        for index, daemon in enumerate(daemons):
            peaks[index] = max(peaks[index], peak_rss_mb(daemon.pid))
        sent = reader.scalar(
            "SELECT count(*) FROM messages WHERE id > ? AND status = 'sent'", first_id)
        # A daemon whose every pulse fails stays up: stop at once, not at the timeout.
        if sent != progress["sent"]:
            progress.update(sent=sent, at=time.monotonic())
        elif time.monotonic() - progress["at"] > STALL_SECONDS:
            raise SystemExit(f"nothing sent for {STALL_SECONDS:.0f}s ({sent} of {args.due}); "
                             f"{last_error(bench.folder)}")
        return sent >= args.due

    measured, codes = _work(daemons, done, args, cpu_before, started,
                            relay.store.dialect == "postgresql")
    figures = _figures(reader, first_id, info["due_at"], args)
    reader.close()
    figures.update(database=relay.store.dialect, stored=args.stored, daemons=args.daemons,
                   exit_codes=codes, peak_rss_mb=round(max(peaks), 1))
    figures.update(measured)
    # Issue 31's fixed reference: cheap (0.1 s), so always; the median of five runs
    # of at least 20,000 (fewer swing by half on a busy machine).
    small = sorted(reference_small(bench.folder, max(args.due, 20_000)) for _ in range(5))[2]
    figures["small_reference_cpu_ms_per_followup"] = small
    figures["cpu_ratio_to_small_reference"] = round(figures["cpu_ms_per_followup"] / small, 1)
    if relay.store.dialect == "sqlite" and not args.no_reference:
        figures.update(_references(bench.url, args.due))
    return figures


def last_error(folder: Any) -> str:
    """The last error line the daemons logged, to say why a run stalled."""
    errors = [line for log in sorted(folder.glob("d*/daemon.log"))
              for line in log.read_text(errors="replace").splitlines()
              if '"level": "error"' in line]
    return f"the daemons' last error: {errors[-1]}" if errors else "the daemons logged no error"


def _work(daemons: list[Any], done: Any, args: argparse.Namespace, cpu_before: dict[str, float],
          started: float, postgres: bool) -> tuple[dict[str, Any], list[int]]:
    """Wait for the daemons to send everything, measure, stop them: (figures, exit codes).

    The daemons' CPU from the release of the work until it was done (start-up
    excluded), over the work done; then the machine's and the server's."""
    measured: dict[str, Any] = {}
    try:
        wait_for(done, timeout=args.max_seconds or 600, every=0.25,
                 alive=lambda: all(d.poll() is None for d in daemons))
        busy = sum(cpu_seconds(d.pid) for d in daemons) - cpu_before["daemons"]
        measured["cpu_ms_per_followup"] = round(busy / args.due * 1000, 3)
        measured.update(_machine_figures(cpu_before, machine_cpu(), time.monotonic() - started,
                                         args.due, postgres))
        if args.idle:
            measured["idle_cpu_percent"] = measure_idle(daemons, args.idle)
    except SystemExit:
        if not args.max_seconds:
            raise
    finally:
        codes = [stop(d) for d in daemons]
    if "cpu_ms_per_followup" not in measured:  # stopped at --max-seconds: their rusage
        cpu = sum(getattr(d, "cpu_seconds", 0.0) for d in daemons) - cpu_before["daemons"]
        measured["cpu_ms_per_followup"] = round(cpu / args.due * 1000, 3)
    return measured, codes


def _references(url: str, due: int) -> dict[str, float]:
    """The two raw-sqlite3 references, on the same file after the daemon's run."""
    rate, cpu_ms = reference_sqlite(url, due)
    full_rate, full_cpu_ms = reference_sqlite_full(url, due)
    return {
        "reference_sqlite_per_s": rate,
        "reference_cpu_ms_per_followup": cpu_ms,
        "reference_full_sqlite_per_s": full_rate,
        "reference_full_cpu_ms_per_followup": full_cpu_ms,
    }


def _machine_figures(before: dict[str, float], after: dict[str, float], wall: float,
                     due: int, server: bool) -> dict[str, float]:
    """Cores busy on average from the release of the work to the last send (every
    process on the machine: the daemons, the server, this poller, anyone else's),
    and the PostgreSQL server's CPU per follow-up."""
    figures = {"machine_busy_cores": round((after["machine"] - before["machine"]) / wall, 2)}
    if server:
        spent = after["server"] - before["server"]
        figures["server_cpu_ms_per_followup"] = round(spent / due * 1000, 3)
    return figures


def measure_idle(daemons: list[Any], seconds: float) -> float:
    """Percent of one core the daemons use, together, once nothing is due."""
    time.sleep(2)  # the last pulse's bookkeeping
    before = sum(cpu_seconds(d.pid) for d in daemons)
    time.sleep(seconds)
    after = sum(cpu_seconds(d.pid) for d in daemons)
    return round((after - before) / seconds * 100, 1)


def _parse(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


def _figures(reader: ReadOnly, first_id: int, due_at: datetime,
             args: argparse.Namespace) -> dict[str, Any]:
    sent = [_parse(v) for (v,) in reader.rows(
        "SELECT sent_at FROM messages WHERE id > ? AND status = 'sent'", first_id)]
    first_firing = reader.scalar(
        "SELECT min(created_at) FROM events WHERE event = 'heartbeat_fires'")
    if not sent or first_firing is None:
        raise SystemExit("nothing was sent before the daemons stopped (--max-seconds?)")
    fired = _parse(first_firing)
    span = (max(sent) - fired).total_seconds()
    # All were due before the daemons started: count from the first firing.
    late = [(s - fired).total_seconds() for s in sent]
    return {
        "per_second": round(len(sent) / span, 1),
        "seconds": round(span, 3),
        "lateness_p50_s": round(percentile(late, 0.5), 3),
        "lateness_p99_s": round(percentile(late, 0.99), 3),
        "due": args.due,
    }


def _reference_store(
    url: str, count: int
) -> tuple[sqlite3.Connection, list[str], dict[str, int], str]:
    """The daemon's file with relay's pragmas, ``count`` waiting instances, each
    instance's contact, and a time stamp in the store's text."""
    path = url.split(":///", 1)[1]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    ids = [r[0] for r in conn.execute(
        "SELECT id, contact_id FROM instances WHERE state = 'WAITING_FOR_REPLY' LIMIT ?",
        (count,))]
    contacts = dict(conn.execute("SELECT id, contact_id FROM instances").fetchall())
    return conn, ids, contacts, datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def reference_sqlite(url: str, count: int) -> tuple[float, float]:
    """Raw sqlite3: per follow-up an UPDATE and two INSERTs, transactions of 100;
    (follow-ups per second, CPU milliseconds per follow-up)."""
    conn, ids, contacts, stamp = _reference_store(url, count)
    started = time.perf_counter()
    cpu_started = time.process_time()
    for offset in range(0, len(ids), 100):
        conn.execute("BEGIN IMMEDIATE")
        for iid in ids[offset:offset + 100]:
            conn.execute(
                "UPDATE instances SET follow_up_count = follow_up_count + 1, "
                "next_heartbeat_at = ?, updated_at = ?, version = version + 1 WHERE id = ?",
                (stamp, stamp, iid))
            conn.execute(
                "INSERT INTO messages (instance_id, contact_id, direction, author, body, "
                "status, channel, kind, idempotency_key, attempts, proactive, created_at, "
                "sent_at) VALUES (?, ?, 'outbound', 'agent', 'Just following up', 'sent', "
                "'console', 'message', ?, 1, 1, ?, ?)",
                (iid, contacts[iid], f"ref-{iid}-{os.getpid()}", stamp, stamp))
            conn.execute(
                "INSERT INTO events (kind, instance_id, from_state, to_state, event, actor, "
                "created_at) VALUES ('state.changed', ?, 'HEARTBEAT_SCHEDULED', "
                "'WAITING_FOR_REPLY', 'followup_sent', 'agent', ?)", (iid, stamp))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    conn.close()
    return round(len(ids) / elapsed, 1), round(cpu / len(ids) * 1000, 4)


def reference_small(folder: Any, count: int) -> float:
    """Issue 31's fixed reference: raw sqlite3, per follow-up one UPDATE and two
    INSERTs into three small unindexed tables (rowid keys only) of a file of its
    own, 100 per transaction, WAL, ``synchronous=NORMAL``; its CPU milliseconds per
    follow-up. The same in every tree, so relay's CPU over it compares runs."""
    path = folder / "reference.db"
    path.unlink(missing_ok=True)
    for extra in ("-wal", "-shm"):
        (folder / f"reference.db{extra}").unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE conversation (id INTEGER PRIMARY KEY, state TEXT, "
                 "follow_ups INTEGER, due_at TEXT, updated_at TEXT)")
    conn.execute("CREATE TABLE message (id INTEGER PRIMARY KEY, conversation INTEGER, "
                 "body TEXT, status TEXT, created_at TEXT)")
    conn.execute("CREATE TABLE change (id INTEGER PRIMARY KEY, conversation INTEGER, "
                 "from_state TEXT, to_state TEXT, created_at TEXT)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO conversation VALUES (?, 'WAITING_FOR_REPLY', 0, NULL, NULL)",
                     [(i,) for i in range(count)])
    conn.execute("COMMIT")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    cpu_started = time.process_time()
    for offset in range(0, count, 100):
        conn.execute("BEGIN IMMEDIATE")
        for cid in range(offset, min(offset + 100, count)):
            conn.execute("UPDATE conversation SET follow_ups = follow_ups + 1, due_at = ?, "
                         "updated_at = ? WHERE id = ?", (stamp, stamp, cid))
            conn.execute("INSERT INTO message (conversation, body, status, created_at) "
                         "VALUES (?, 'Just following up', 'sent', ?)", (cid, stamp))
            conn.execute("INSERT INTO change (conversation, from_state, to_state, created_at) "
                         "VALUES (?, 'FOLLOWING_UP', 'WAITING_FOR_REPLY', ?)", (cid, stamp))
        conn.execute("COMMIT")
    cpu = time.process_time() - cpu_started
    conn.close()
    return round(cpu / count * 1000, 5)


def reference_sqlite_full(url: str, count: int) -> tuple[float, float]:
    """Raw sqlite3 doing every row write relay does for a follow-up, in relay's
    transactions, batches of 100: the firing (instance UPDATE, the state change's
    INSERT into the record), the turn commit (instance UPDATE, the message
    INSERTed leased to its sender, the state change's and the queued message's
    rows) and the record of the send (message UPDATE, its row): 8 statements over
    3 transactions. What a follow-up costs the database alone, with no decision
    taken in Python."""
    conn, ids, contacts, stamp = _reference_store(url, count)
    data = '{"from": "WAITING_FOR_REPLY", "to": "FOLLOWING_UP", "event": "heartbeat_fires"}'
    event = ("INSERT INTO events (kind, instance_id, actor, data, created_at) "
             "VALUES (?, ?, 'relay', ?, ?)")
    change = ("INSERT INTO events (kind, instance_id, from_state, to_state, event, actor, "
              "created_at) VALUES ('state.changed', ?, 'WAITING_FOR_REPLY', 'FOLLOWING_UP', "
              "'x', 'relay', ?)")
    started = time.perf_counter()
    cpu_started = time.process_time()
    for offset in range(0, len(ids), 100):
        batch = ids[offset:offset + 100]
        conn.execute("BEGIN IMMEDIATE")  # the firing
        for iid in batch:
            conn.execute("UPDATE instances SET state = 'FOLLOWING_UP', version = version + 1, "
                         "updated_at = ?, next_heartbeat_at = NULL, lease_owner = 'ref', "
                         "lease_expires_at = ? WHERE id = ?", (stamp, stamp, iid))
            conn.execute(change, (iid, stamp))
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")  # the turn commit
        message_ids = []
        for iid in batch:
            conn.execute("UPDATE instances SET state = 'WAITING_FOR_REPLY', version = version + 1, "
                         "updated_at = ?, next_heartbeat_at = ?, lease_owner = NULL, "
                         "lease_expires_at = NULL, follow_up_count = follow_up_count + 1 "
                         "WHERE id = ?", (stamp, stamp, iid))
            cursor = conn.execute(
                "INSERT INTO messages (instance_id, contact_id, direction, author, body, "
                "status, channel, kind, idempotency_key, attempts, proactive, created_at, "
                "next_attempt_at, lease_owner) VALUES (?, ?, 'outbound', 'agent', "
                "'Just following up', 'sending', 'console', 'message', ?, 1, 1, ?, ?, 'ref')",
                (iid, contacts[iid], f"full-{iid}-{os.getpid()}", stamp, stamp))
            message_ids.append(cursor.lastrowid)
            conn.execute(change, (iid, stamp))
            conn.execute(event, ("outbound", iid, data, stamp))
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")  # the record of the sends
        for iid, message_id in zip(batch, message_ids, strict=True):
            conn.execute("UPDATE messages SET status = 'sent', provider_message_id = 'p', "
                         "sent_at = ?, next_attempt_at = NULL, lease_owner = NULL WHERE id = ?",
                         (stamp, message_id))
            conn.execute(event, ("sent", iid, data, stamp))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    conn.close()
    return round(len(ids) / elapsed, 1), round(cpu / len(ids) * 1000, 4)


if __name__ == "__main__":
    os.environ.pop("RELAY_CONFIG", None)
    sys.exit(main())
