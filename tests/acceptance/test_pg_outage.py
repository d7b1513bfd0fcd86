"""A PostgreSQL outage under a running daemon, on a cluster of the test's own.

The test makes a throwaway cluster (``initdb`` into a temporary folder, ``pg_ctl
start`` on a free port: never the shared server), runs ``relay daemon`` against it,
appends replies to the console inbox, stops the cluster (``pg_ctl stop -m fast``)
while more replies are written, starts it again, and checks that every line is
stored exactly once, the conversation went on, and the daemon never exited.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from chaoslib import ChaosSettings, Daemon, append_line, read_deliveries, relay_argv, write_config
from chaoslib import child_env as relay_env
from sqlalchemy import func, select

from relay.store.database import Store, make_engine
from relay.store.models import Daemon as DaemonRow
from relay.store.models import Message
from relay.testing import wait_until

pytestmark = pytest.mark.slow

CONTACT = "+15557709001"


def postgres_bin() -> Path | None:
    """The newest server binaries installed (Debian's layout), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version)
    return found[-1].parent if found else None


def _version(path: Path) -> float:
    try:
        return float(path.parts[-3])
    except ValueError:
        return 0.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A PostgreSQL cluster in a folder of its own, run as the ``postgres`` user when
    the test runs as root (the server refuses to run as root)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="relay-outage-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def run(self, tool: str, *args: str) -> None:
        argv = [*self.as_user, str(self.bindir / tool), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def init(self) -> None:
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off"
        )
        log = str(self.root / "server.log")
        self.run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def remove(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (initdb) under /usr/lib/postgresql")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start a server as postgres")
    made = Cluster(bindir)
    try:
        made.init()
        made.start()
        yield made
    finally:
        made.remove()


def _migrated(cluster: Cluster) -> str:
    import psycopg

    from relay.store.migrate import upgrade_url

    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE relay")
    url = cluster.url("relay")
    upgrade_url(url)
    return url


def _stored(store: Store) -> Counter[str]:
    with store.transaction() as session:
        return Counter(
            session.scalars(
                select(Message.provider_message_id).where(
                    Message.direction == "inbound", Message.channel == "console"
                )
            )
        )


def _reply(inbox: Path, written: list[str], text: str) -> None:
    line_id = f"outage-{uuid.uuid4()}"
    append_line(inbox, {"from": CONTACT, "text": text, "id": line_id})
    written.append(line_id)


def test_the_daemon_rides_out_a_postgresql_outage_and_stores_every_line_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = _migrated(cluster)
    shared = tmp_path / "shared"
    shared.mkdir()
    config = write_config(tmp_path / "daemon", url, shared, ChaosSettings(seed=0, seconds=0))
    inbox, store = shared / "console-inbox.jsonl", Store(make_engine(url))
    _start_conversation(config)
    daemon, written = Daemon(config), []
    daemon.start()
    try:
        wait_until(daemon.ready, timeout=120)
        for n in range(5):
            _reply(inbox, written, f"answer {n}")
        wait_until(lambda: sum(_stored(store).values()) >= 5, timeout=120, every=0.2)

        cluster.stop("fast")
        down = time.monotonic()
        for n in range(10):  # replies keep coming while the database is away
            _reply(inbox, written, f"answer during the outage {n}")
            time.sleep(0.4)
        wait_until(lambda: b'"level": "error"' in daemon.log_path.read_bytes(), timeout=60)
        assert daemon.alive, daemon.tail()
        outage = time.monotonic() - down
        cluster.start()
        back = datetime.now(UTC)
        for n in range(5):
            _reply(inbox, written, f"answer after the outage {n}")

        wait_until(lambda: set(_stored(store)) >= set(written), timeout=120, every=0.2)
        wait_until(lambda: _delivered_since(shared, back), timeout=120, every=0.2)
        wait_until(lambda: _pulsed_since(store, back), timeout=60, every=0.2)
        assert daemon.alive, daemon.tail()
    finally:
        code = daemon.stop()
        store.dispose()
    stored = _stored(store)
    assert [i for i in written if stored[i] != 1] == [], "each line stored exactly once"
    assert len(written) == 20 and outage >= 4
    assert code == 0, daemon.tail()
    keys = Counter(d["idempotency_key"] for d in read_deliveries(shared / "console.jsonl"))
    assert [k for k, n in keys.items() if n > 1] == []
    errors = [json.loads(line) for line in daemon.tail(200_000).splitlines() if '"error"' in line]
    assert errors, "the outage should have been logged"


def _start_conversation(config: Path) -> None:
    """A conversation with many todos, so every reply gets an answer."""
    todos = [arg for n in range(30) for arg in ("-t", f"Question {n}?")]
    started = subprocess.run(
        relay_argv(config, "start", CONTACT, "-o", "the outage", *todos, "--heartbeat", "1h"),
        env=relay_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert started.returncode == 0, started.stderr


def _pulsed_since(store: Store, moment: datetime) -> bool:
    """The daemon has recorded a whole pulse since ``moment``."""
    with store.transaction() as session:
        last_pulse = session.scalar(select(func.max(DaemonRow.last_pulse_at)))
    return last_pulse is not None and last_pulse >= moment


def _delivered_since(shared: Path, moment: datetime) -> bool:
    """The conversation went on after the outage: the agent answered a reply."""
    for record in read_deliveries(shared / "console.jsonl"):
        sent = datetime.fromisoformat(record["sent_at"].replace("Z", "+00:00"))
        if sent > moment:
            return True
    return False
