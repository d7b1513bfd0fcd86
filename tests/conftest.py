"""Shared fixtures for relay's tests.

Every test runs in its own temporary working directory with no ``RELAY_*``
settings from the machine (llm's habit: tests never see the machine's state).

Databases
    ``db_url``        a migrated database, once on SQLite and once on PostgreSQL
                      (test ids ``[sqlite]`` / ``[postgres]``; the PostgreSQL
                      case is marked ``postgres``).
    ``empty_db_url``  the same two, but with no schema (for migration tests).

    PostgreSQL comes from ``RELAY_TEST_DATABASE_URL`` (for example
    ``postgresql://postgres@127.0.0.1:5432/test``). Without it the PostgreSQL
    cases are skipped, unless ``RELAY_REQUIRE_POSTGRES=1`` (as in CI), which
    makes them fail instead. Each test process (pytest-xdist worker) gets one
    database, copied from a template migrated once, and emptied with TRUNCATE
    after every test.

API and CLI
    ``clock``         a :class:`relay.testing.FakeClock`; move it, never sleep.
    ``make_relay``    ``make_relay(db_url, clock)`` -> a :class:`Relay` on its
                      own engine (disposed at teardown).
    ``relay_api``     ``make_relay(db_url, clock)``.
    ``drive``         ``drive(relay, instance_id, *events)`` applies state-machine
                      events through ``transitions.apply_event`` in one
                      transaction, to put an instance in a state no CLI verb
                      reaches (ACTIVE, WAITING_FOR_REPLY, ...).
    ``cli``           ``cli("list", "--json")`` runs the Typer app in-process
                      against ``db_url`` and returns a :class:`CliResult`
                      (``exit_code``, ``stdout``, ``stderr`` kept apart, ``json()``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PG_URL_ENV = "RELAY_TEST_DATABASE_URL"
REQUIRE_PG_ENV = "RELAY_REQUIRE_POSTGRES"
_KEEP_ENV = frozenset({PG_URL_ENV, REQUIRE_PG_ENV})

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


# -- isolation ---------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in an empty directory with no RELAY_* settings but the test database's."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("RELAY_") and name not in _KEEP_ENV:
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_COLOR", "1")
    # a relay.toml or .relay/ left in /tmp (or above) must not capture the test
    monkeypatch.setenv("RELAY_CEILING_DIRECTORIES", str(tmp_path.parent))


# -- PostgreSQL server: a per-session template, a database per test --------------


class PostgresServer:
    """Creates and drops throwaway databases on the server named by the env var.

    Creating a database from the template and dropping it take a few hundred
    milliseconds, mostly waiting for the server. So one worker thread does that
    work in the background: it prepares the next test's database while the
    current test runs, and drops used ones afterwards. Database names carry
    this process's id; databases left behind by a killed test run are dropped
    by the next run.
    """

    PREFIX = "relay_t_"

    def __init__(self, url: str) -> None:
        from sqlalchemy.engine import make_url

        self._base = make_url(url).set(drivername="postgresql")
        self._admin_conninfo = self._base.render_as_string(hide_password=False)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relay-test-pg")
        self._next: Future[str] | None = None
        self.template: str | None = None

    def url_for(self, database: str) -> str:
        return self._base.set(database=database).render_as_string(hide_password=False)

    def _admin(self, sql: str) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self._admin_conninfo, autocommit=True, connect_timeout=10) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def check(self) -> None:
        self._admin("SELECT 1")

    def create(self, template: str = "template0") -> str:
        """A new database copied from ``template`` (template0: empty, and nobody
        else is ever connected to it, which CREATE DATABASE requires)."""
        name = f"{self.PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {template}")
        return name

    def drop(self, name: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def drop_later(self, name: str) -> None:
        self._worker.submit(self.drop, name)

    def migrated_template(self) -> str:
        """A database migrated to head, made once per session."""
        if self.template is None:
            name = self.create()
            try:
                _upgrade(self.url_for(name))
            except BaseException:
                self.drop(name)
                raise
            self.template = name
        return self.template

    def migrated_copy(self) -> str:
        """A fresh copy of the migrated template; the next one is made meanwhile."""
        template = self.migrated_template()
        ready = self._next or self._worker.submit(self.create, template)
        self._next = None
        name = ready.result()
        self._next = self._worker.submit(self.create, template)
        return name

    def drop_leftovers(self) -> None:
        """Drop databases of earlier test runs whose process no longer exists."""
        rows = self._admin(f"SELECT datname FROM pg_database WHERE datname LIKE '{self.PREFIX}%'")
        for (name,) in rows:
            pid = name[len(self.PREFIX) :].split("_", 1)[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                self.drop(name)

    def close(self) -> None:
        if self._next is not None:
            with contextlib.suppress(Exception):  # if it failed, nothing was created
                self.drop_later(self._next.result())
        if self.template is not None:
            self.drop_later(self.template)
        self._worker.shutdown(wait=True)


def _pid_alive(pid: int) -> bool:
    from relay.runner.process import pid_alive

    return pid_alive(pid)


def _upgrade(url: str) -> None:
    from relay.store.migrate import upgrade_url  # alembic only for tests that need a schema

    upgrade_url(url)


class _Unreachable:
    def __init__(self, url: str, exc: Exception) -> None:
        self.url, self.exc = url, exc


@pytest.fixture(scope="session")
def _pg_server() -> Iterator[PostgresServer | _Unreachable | None]:
    url = os.environ.get(PG_URL_ENV)
    if not url:
        yield None
        return
    server = PostgresServer(url)
    try:
        server.check()
        server.drop_leftovers()
    except Exception as exc:  # reported by the fixtures that need it
        yield _Unreachable(url, exc)
        return
    try:
        yield server
    finally:
        server.close()


def _need_postgres(server: PostgresServer | _Unreachable | None) -> PostgresServer:
    required = os.environ.get(REQUIRE_PG_ENV) == "1"
    if isinstance(server, _Unreachable):
        message = f"PostgreSQL at {server.url} is unreachable: {server.exc}"
        if required:
            pytest.fail(message)
        pytest.skip(message)
    if server is None:
        message = f"{PG_URL_ENV} is not set"
        if required:
            pytest.fail(f"{message}, but {REQUIRE_PG_ENV}=1")
        pytest.skip(message)
    return server


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once; tests get copies."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    _upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def db_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    _pg_server: PostgresServer | _Unreachable | None,
) -> Iterator[str]:
    """A database at the schema head, of its own for this test."""
    if request.param == "sqlite":
        target = tmp_path / "db" / "relay.db"
        target.parent.mkdir()
        shutil.copyfile(request.getfixturevalue("_sqlite_template"), target)
        yield f"sqlite:///{target}"
        return
    _need_postgres(_pg_server)
    worker: _WorkerDatabase = request.getfixturevalue("_pg_worker_database")
    url = worker.url()
    try:
        yield url
    finally:
        worker.reset()


class _WorkerDatabase:
    """One migrated PostgreSQL database per test process, emptied after each test.

    ``TRUNCATE … RESTART IDENTITY`` takes milliseconds where ``CREATE DATABASE``
    takes hundreds; with pytest-xdist each worker has its own database, so
    tests never see each other's rows. Should emptying fail (a test left a lock
    or changed the schema), the next test gets a fresh copy instead.
    """

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.name: str | None = None

    def url(self) -> str:
        if self.name is None:
            self.name = self.server.migrated_copy()
        return self.server.url_for(self.name)

    def reset(self) -> None:
        import psycopg

        from relay.store.tables import metadata

        if self.name is None:
            return
        from relay.store.database import HEAD_REVISION

        tables = ", ".join(f'"{name}"' for name in metadata.tables)
        try:
            with psycopg.connect(
                self.server.url_for(self.name), autocommit=True, connect_timeout=10
            ) as conn:
                # A session a test left open would hold its locks until it is closed.
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                conn.execute("SET lock_timeout = '5s'")
                conn.execute(f"TRUNCATE TABLE {tables} RESTART IDENTITY CASCADE")
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            if row is None or row[0] != HEAD_REVISION:
                raise psycopg.DataError("a test moved the schema")
        except psycopg.Error:
            self.server.drop_later(self.name)
            self.name = None

    def close(self) -> None:
        if self.name is not None:
            self.server.drop_later(self.name)
            self.name = None


@pytest.fixture(scope="session")
def _pg_worker_database(
    _pg_server: PostgresServer | _Unreachable | None,
) -> Iterator[_WorkerDatabase]:
    worker = _WorkerDatabase(_need_postgres(_pg_server))
    try:
        yield worker
    finally:
        worker.close()


@pytest.fixture(params=BACKENDS)
def empty_db_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    _pg_server: PostgresServer | _Unreachable | None,
) -> Iterator[str]:
    """A database with no schema at all, of its own for this test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty' / 'relay.db'}"
        return
    server = _need_postgres(_pg_server)
    name = server.create()
    try:
        yield server.url_for(name)
    finally:
        server.drop_later(name)


@pytest.fixture
def db_kind(db_url: str) -> str:
    """``sqlite`` or ``postgresql`` for the current ``db_url``."""
    return "sqlite" if db_url.startswith("sqlite") else "postgresql"


# -- the Python API ------------------------------------------------------------------


@pytest.fixture
def clock(relay_clock: Any) -> Any:
    """The plugin's ``relay_clock`` (relay.pytest_plugin), under its short name."""
    return relay_clock


@pytest.fixture
def make_relay() -> Iterator[Callable[..., Any]]:
    """``make_relay(db_url, clock=None, **config_overrides)`` -> a Relay on a new engine."""
    from engine_relay import EngineRelay as Relay

    from relay.config import load_config
    from relay.store.database import Store, make_engine

    stores: list[Any] = []

    def factory(url: str, clock: Any = None, **overrides: Any) -> Relay:
        config = load_config(overrides={"database.url": url, **overrides})
        store = Store(make_engine(url))
        stores.append(store)
        return Relay(store, config, clock)

    yield factory
    for store in stores:
        store.dispose()


@pytest.fixture
def relay_api(make_relay: Callable[..., Any], db_url: str, clock: Any) -> Any:
    return make_relay(db_url, clock)


@pytest.fixture
def drive() -> Callable[..., str]:
    """Apply events to one instance in one transaction; returns the final state."""
    from relay.core.states import Event
    from relay.engine.conversation import transitions
    from relay.store import instances

    def apply(relay: Any, instance_id: str, *events: Event | str, actor: str = "test") -> str:
        with relay.store.transaction() as session:
            instance = instances.resolve(session, instance_id, lock=True)
            for event in events:
                transitions.apply_event(
                    session, instance, Event(event), now=relay.now(), actor=actor
                )
            return instance.state

    return apply


# -- the CLI ----------------------------------------------------------------------------


@dataclass
class CliResult:
    """What one CLI run produced; stdout and stderr are kept apart."""

    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return (
            f"relay {' '.join(self.args)} -> exit {self.exit_code}\n"
            f"--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}"
        )


@pytest.fixture
def run_cli() -> Callable[..., CliResult]:
    """``run_cli(*args, env={...}, input=None)`` with no database chosen for you."""
    from typer.testing import CliRunner

    from relay.cli.main import app

    def invoke(
        *args: str, env: Mapping[str, str | None] | None = None, input: str | None = None
    ) -> CliResult:
        runner = CliRunner()
        result = runner.invoke(app, list(args), env=dict(env or {}), input=input)
        return CliResult(
            args=tuple(args),
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            exception=result.exception,
        )

    return invoke


@pytest.fixture
def cli(run_cli: Callable[..., CliResult], db_url: str) -> Callable[..., CliResult]:
    """``cli(*args, env={...})`` runs ``relay ARGS`` with RELAY_DATABASE_URL=db_url."""

    def invoke(
        *args: str, env: Mapping[str, str | None] | None = None, input: str | None = None
    ) -> CliResult:
        return run_cli(*args, env={"RELAY_DATABASE_URL": db_url, **(env or {})}, input=input)

    return invoke


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """A command run in-process (``relay daemon --detached-child``, ``relay serve``)
    points relay's log at the CliRunner's stderr, closed once it returns; each test
    gets back the handlers it started with, or every later log line in the worker
    becomes a "Logging error" on some other test's stderr."""
    names = ("relay", "apscheduler")
    kept = [
        (log, list(log.handlers), log.level, log.propagate) for log in map(logging.getLogger, names)
    ]
    switches = (logging._srcfile, logging.logThreads, logging.logMultiprocessing)
    yield
    for log, handlers, level, propagate in kept:
        log.handlers[:] = handlers
        log.setLevel(level)
        log.propagate = propagate
    logging._srcfile, logging.logThreads, logging.logMultiprocessing = switches
