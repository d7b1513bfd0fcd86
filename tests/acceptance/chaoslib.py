"""A crash-and-race harness: real ``relay daemon`` processes, concurrent CLI commands,
SIGKILLs at random moments, then a check of the store and the console files.

Used by ``tests/acceptance/test_chaos.py`` (a short run, marked ``slow``) and by
``bench/chaos.py`` (a long one). Nothing here is in-process: every daemon and every
command is a subprocess of ``python -m relay``, as an operator would run them, on one
working folder per daemon (one PID file each) sharing one database and one pair of
console files (``console.jsonl`` out, ``console-inbox.jsonl`` in).

The workload, drawn from a seeded ``random.Random`` (the seed is printed):

* ``relay start`` for a small pool of contacts (so queues form), sometimes ``--defer``,
  with a 2 s heartbeat and 0-2 follow-ups (silences end in follow-ups and ABANDONED);
* replies appended to the inbox with unique ids: answers (the scripted agent then asks
  the next todo or thanks and ends), "a human please" (NEEDS_HUMAN_INTERVENTION),
  "STOP" (opt-out) and "START" (opt-in);
* ``relay pause``, ``resume``, ``cancel`` and ``send`` on known conversations, their
  ``--json`` answers recorded (the acknowledgement, with ``in_flight``);
* ``relay contact opt-out`` of a random contact, its ``--json`` answer recorded;
* ``relay tick`` and reads;
* a killer that SIGKILLs a random daemon every few seconds and restarts it at once.

Then the workload stops, the daemons settle (polled with a deadline), and
:func:`check` counts what must be zero: lost inbound, duplicate deliveries,
deliveries after an acknowledged cancel, pause or opt-out (beyond what the
acknowledgement reported ``in_flight``; for an opt-out, until the contact opts back
in), out-of-order deliveries, stranded instances and messages,
and ``relay doctor`` findings.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from messaging_fakes import fake_twilio
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.states import State
from relay.store import claims
from relay.store.database import Store, make_engine
from relay.store.due import count_due
from relay.store.models import ChannelCursor, Contact, EventRow, Instance, Message

ANSWERS = ("Thursday works", "Morning, please", "Yes, that address is right", "Friday after 3")
TODOS = ("Which day suits you?", "Morning or afternoon?", "Is 12 Harbour Street right?")
TERMINAL = frozenset(s.value for s in State if s.terminal)
LIVE = frozenset(s.value for s in State if not s.terminal)
#: States in which an instance waits for nothing relay does (a person, a resume, a slot).
RESTING = frozenset({"PAUSED", "NEEDS_HUMAN_INTERVENTION", "QUEUED"}) | TERMINAL
FIGURES = (
    "deliveries",
    "inbound",
    "kills",
    "commands",
    "lost",
    "duplicates",
    "duplicates_console",
    "duplicates_sms",
    "unknown_fate",
    "reconciled",
    "post_cancel",
    "post_pause",
    "post_opt_out",
    "out_of_order",
    "stranded",
    "doctor",
)


@dataclass(frozen=True)
class ChaosSettings:
    seed: int
    seconds: float
    daemons: int = 1
    contacts: int = 6
    workers: int = 3
    kill_every: tuple[float, float] = (3.0, 8.0)
    settle_seconds: float = 60.0
    heartbeat: str = "2s"
    pulse: str = "1s"
    poll: str = "1s"
    #: ``relay tick`` among the commands (it claims turns and polls like a daemon).
    ticks: bool = True
    #: Conversations started per contact before the work begins (through the Python
    #: API, cheaply), so queues and turns are there from the first second.
    seed_per_contact: int = 2
    #: Half the contacts talk over SMS, through a loopback Twilio (``messaging_fakes``)
    #: that keeps no idempotency key and answers a create a while after it has the
    #: message (``sms_latency``): a kill in between leaves a message whose fate relay
    #: must find out.
    sms: bool = True
    #: Seconds the fake Twilio takes to answer a create it has taken (low, high).
    sms_latency: tuple[float, float] = (0.05, 0.3)


@dataclass
class Ack:
    """A command's answer: what ``relay pause/resume/cancel/send --json`` said."""

    verb: str
    instance_id: str
    code: int
    data: dict[str, Any] | None
    returned_at: datetime


@dataclass
class ChaosLog:
    """What the harness did, for the checks."""

    inbox: list[dict[str, str]] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    kills: int = 0
    commands: Counter[str] = field(default_factory=Counter)
    #: Seconds spent per verb, and the last stderr line of commands that exited >= 2.
    seconds: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class ChaosResult:
    settings: ChaosSettings
    figures: dict[str, int]
    problems: list[str]
    settled: bool
    elapsed: float

    @property
    def ok(self) -> bool:
        return self.settled and not self.problems

    def json_line(self) -> str:
        return json.dumps(
            {
                "seed": self.settings.seed,
                "daemons": self.settings.daemons,
                "seconds": self.settings.seconds,
                "settled": self.settled,
                **self.figures,
            }
        )

    def table(self) -> str:
        rows = [f"{'figure':<18} {'value':>8}"]
        rows += [f"{name:<18} {self.figures.get(name, 0):>8}" for name in FIGURES]
        rows.append(f"{'settled':<18} {self.settled!s:>8}")
        return "\n".join(rows)


# -- processes -----------------------------------------------------------------------------


def relay_argv(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "relay", "--config", str(config), *args]


#: The fake Twilio's number, and the variable its auth token is in.
SMS_FROM = "+15550001111"
SMS_TOKEN_ENV = "CHAOS_TWILIO_TOKEN"


def child_env() -> dict[str, str]:
    from messaging_fakes import TOKEN

    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env["NO_COLOR"] = "1"
    env[SMS_TOKEN_ENV] = TOKEN
    return env


def sms_section(api_url: str | None) -> list[str]:
    if api_url is None:
        return []
    from messaging_fakes import ACCOUNT

    return [
        "[channels.sms]",
        'type = "sms"',
        f'account_sid = "{ACCOUNT}"',
        f'auth_token_env = "{SMS_TOKEN_ENV}"',
        f'from = "{SMS_FROM}"',
        f'api_url = "{api_url}"',
        'public_url = "http://127.0.0.1:9"',  # nothing pushes back: replies come by the inbox
        "status_callback = false",
        "segments_per_second = 0",
    ]


def write_config(
    folder: Path, url: str, shared: Path, settings: ChaosSettings, sms_api: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "relay.toml"
    path.write_text(
        "\n".join(
            [
                "[database]",
                f'url = "{url}"',
                *sms_section(sms_api),
                "[channels.console]",
                f'file = "{shared / "console.jsonl"}"',
                f'inbox = "{shared / "console-inbox.jsonl"}"',
                "echo = false",
                "[daemon]",
                f'pulse = "{settings.pulse}"',
                f'poll = "{settings.poll}"',
                "[defaults]",
                f'heartbeat = "{settings.heartbeat}"',
                "[outbox]",
                'backoff = "1s"',
                "",
            ]
        )
    )
    return path


class Daemon:
    """One ``relay daemon`` in its own folder; its stderr log survives restarts."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.log_path = config.parent / "daemon.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_start = 0

    def start(self) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in kill()/stop()
        self._log_start = self._log.tell()
        self.process = subprocess.Popen(
            relay_argv(self.config, "daemon", "--log-format", "json"),
            cwd=self.config.parent,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )

    def ready(self) -> bool:
        """Up since its last start: it has logged its start (registered in the store)."""
        if not self.alive or not self.log_path.exists():
            return False
        with open(self.log_path, "rb") as handle:
            handle.seek(self._log_start)
            return b" started (pulse " in handle.read()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self._close()

    def stop(self, timeout: float = 60.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return -int(signal.SIGKILL)  # it did not stop gracefully in time
        finally:
            self._close()

    def _close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


def append_line(path: Path, record: dict[str, str]) -> None:
    """One whole line with one ``write`` on an O_APPEND descriptor (never interleaved)."""
    data = (json.dumps(record) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# -- the run ---------------------------------------------------------------------------------


class Chaos:
    def __init__(
        self, url: str, folder: Path, settings: ChaosSettings, say: Callable[[str], None] = print
    ) -> None:
        self.url = url
        self.settings = settings
        self.say = say
        self.shared = folder / "shared"
        self.shared.mkdir(parents=True, exist_ok=True)
        self.inbox = self.shared / "console-inbox.jsonl"
        self.outbox = self.shared / "console.jsonl"
        self._servers = ExitStack()
        self.twilio = self._servers.enter_context(fake_twilio()) if settings.sms else None
        sms_api = self.twilio.base_url if self.twilio is not None else None
        if self.twilio is not None:
            from messaging_fakes import TOKEN

            os.environ.setdefault(SMS_TOKEN_ENV, TOKEN)  # for the conversations seeded here
            latency = random.Random(settings.seed + 1)
            self.twilio.answer_delay = lambda: latency.uniform(*settings.sms_latency)
        self.cli_config = write_config(folder / "cli", url, self.shared, settings, sms_api)
        self.daemons = [
            Daemon(write_config(folder / f"daemon{n}", url, self.shared, settings, sms_api))
            for n in range(settings.daemons)
        ]
        self.log = ChaosLog()
        self.random = random.Random(settings.seed)
        self.contacts = [f"+1555770{n:04d}" for n in range(settings.contacts)]
        #: Contacts whose conversations go over SMS (every other one).
        self.sms_contacts = set(self.contacts[1::2]) if settings.sms else set()
        self.stop_work = threading.Event()
        #: The last state each conversation was seen in (from the commands' answers).
        self.seen: dict[str, str] = {}
        self.store = Store(make_engine(url))

    def run(self) -> ChaosResult:
        self.say(
            f"chaos: seed {self.settings.seed}, {self.settings.daemons} daemon(s), "
            f"{self.settings.seconds:.0f}s of work on {self.url.split(':', 1)[0]}"
        )
        began = time.monotonic()
        for daemon in self.daemons:
            daemon.start()
        try:
            self._seed_conversations()
            self._wait_ready()
            self._work()
            settled = self._settle()
            problems, figures = check(self)
        finally:
            codes = [d.stop() for d in self.daemons]
            self.store.dispose()
            self._servers.close()
        if any(code not in (0, None) for code in codes):
            problems.append(f"daemon exit codes after settling: {codes}")
        figures["kills"] = self.log.kills
        figures["commands"] = sum(self.log.commands.values())
        self._summary()
        return ChaosResult(self.settings, figures, problems, settled, time.monotonic() - began)

    def _summary(self) -> None:
        runs: Counter[str] = Counter()
        for key, count in self.log.commands.items():
            runs[key.split(":")[0]] += count
        means = {verb: round(self.log.seconds[verb] / n, 1) for verb, n in sorted(runs.items())}
        self.say(f"commands (verb:exit code): {dict(sorted(self.log.commands.items()))}")
        self.say(f"mean seconds per command: {means}")
        if self.log.errors:
            self.say(f"errors (exit >= 2): {dict(self.log.errors.most_common(5))}")

    def _seed_conversations(self) -> None:
        from engine_relay import EngineRelay as Relay

        from relay.config import load_config

        relay = Relay(self.store, load_config(str(self.cli_config)))
        rng = random.Random(self.settings.seed)
        for _ in range(self.settings.seed_per_contact):
            for contact in self.contacts:
                todos = rng.sample(TODOS, rng.randint(1, 3))
                view = relay.start(
                    contact,
                    "the delivery of order 1042",
                    todos,
                    max_followups=rng.randint(0, 2),
                    channel=self.channel_of(contact),
                )
                self.log.started.append(view.id)
                self.seen[view.id] = view.state

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(d.ready() for d in self.daemons):
            if time.monotonic() > deadline:
                raise RuntimeError(f"daemons not up after {timeout}s: {self.daemons[0].tail()}")
            time.sleep(0.1)

    def _work(self) -> None:
        seeds = [self.random.randrange(2**32) for _ in range(self.settings.workers + 2)]
        threads = [
            threading.Thread(target=self._worker, args=(random.Random(s),), daemon=True)
            for s in seeds[:-2]
        ]
        threads.append(threading.Thread(target=self._contact, args=(random.Random(seeds[-2]),)))
        killer = threading.Thread(target=self._killer, args=(random.Random(seeds[-1]),))
        for thread in [*threads, killer]:
            thread.start()
        self.stop_work.wait(self.settings.seconds)
        self.stop_work.set()
        for thread in [*threads, killer]:
            thread.join(timeout=120)
        for daemon in self.daemons:
            if not daemon.alive:
                daemon.start()

    def _killer(self, rng: random.Random) -> None:
        """SIGKILL a random daemon a random while after it is up (it has registered
        and pulsed: killing one still importing relay would test nothing), restart it."""
        low, high = self.settings.kill_every
        while not self.stop_work.is_set():
            daemon = rng.choice(self.daemons)
            while not daemon.ready() and not self.stop_work.wait(0.1):
                pass
            if self.stop_work.wait(rng.uniform(low, high)):
                return
            daemon.kill()
            with self.log.lock:
                self.log.kills += 1
            daemon.start()

    # -- the workload ---------------------------------------------------------------------

    def _worker(self, rng: random.Random) -> None:
        actions: list[tuple[Callable[[random.Random], None], int]] = [
            (self._start, 22),
            (self._reply, 10),
            (self._pause, 7),
            (self._resume, 9),
            (self._cancel, 7),
            (self._send, 7),
            (self._read, 8),
            (self._opt_out, 3),
        ]
        if self.settings.ticks:
            actions.append((self._tick, 4))
        verbs, weights = zip(*actions, strict=True)
        while not self.stop_work.is_set():
            rng.choices(verbs, weights)[0](rng)

    def cli(self, *args: str, timeout: float = 90) -> tuple[int, str]:
        began = time.monotonic()
        try:
            done = subprocess.run(
                relay_argv(self.cli_config, *args),
                cwd=self.cli_config.parent,
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            code, out, err = -1, "", "timed out"
        else:
            code, out, err = done.returncode, done.stdout, done.stderr
        took = time.monotonic() - began
        with self.log.lock:
            self.log.commands[f"{args[0]}:{code}"] += 1
            self.log.seconds[args[0]] += took
            if code not in (0, 1):
                self.log.errors[(err.strip().splitlines() or ["?"])[-1][:120]] += 1
        return code, out

    def channel_of(self, contact: str) -> str:
        return "sms" if contact in self.sms_contacts else "console"

    def _start(self, rng: random.Random) -> None:
        todos = rng.sample(TODOS, rng.randint(1, 3))
        contact = rng.choice(self.contacts)
        args = ["start", contact, "-o", "the delivery of order 1042"]
        args += ["--channel", self.channel_of(contact)]
        for todo in todos:
            args += ["-t", todo]
        args += ["--max-followups", str(rng.randint(0, 2)), "--json"]
        if rng.random() < 0.5:
            args.append("--defer")
        code, out = self.cli(*args)
        if code == 0:
            view = json.loads(out)
            with self.log.lock:
                self.log.started.append(view["id"])
                self.seen[view["id"]] = view["state"]

    def _contact(self, rng: random.Random) -> None:
        """The contacts: replies arrive all the time (a cheap write, no process),
        mostly from contacts in a live conversation, as the store last showed."""
        while not self.stop_work.is_set():
            live = self._look()
            self._reply(rng, live)
            self.stop_work.wait(rng.uniform(0.2, 1.0))

    def _look(self) -> list[str]:
        """Read the conversations' states (for choosing what to pause, resume, ...)
        and the contacts who hold a live conversation; an observer's read only."""
        try:
            with self.store.read_transaction() as session:
                rows = session.execute(
                    select(Instance.id, Instance.state, Contact.address, Instance.contact_slot)
                    .join(Contact, Contact.id == Instance.contact_id)
                    .order_by(Instance.seq.desc())
                    .limit(60)
                ).all()
        except Exception:  # a locked SQLite file: the last view will do
            return []
        with self.log.lock:
            self.seen.update((row.id, row.state) for row in rows)
        return sorted({row.address for row in rows if row.contact_slot is not None})

    def _reply(self, rng: random.Random, live: list[str] | None = None) -> None:
        roll = rng.random()
        if roll < 0.03:
            text = "STOP"
        elif roll < 0.07:
            text = "START"
        elif roll < 0.13:
            text = "Can I talk to a human please"
        else:
            text = rng.choice(ANSWERS)
        sender = rng.choice(live if live and rng.random() < 0.8 else self.contacts)
        record = {"from": sender, "text": text, "id": f"chaos-{uuid.uuid4()}"}
        with self.log.lock:
            append_line(self.inbox, record)
            self.log.inbox.append(record)

    def _known(self, rng: random.Random, states: frozenset[str] | None = None) -> str | None:
        """A recent conversation, preferably in one of ``states`` as last seen."""
        with self.log.lock:
            recent = self.log.started[-15:]
            fitting = [i for i in recent if states is None or self.seen.get(i) in states]
        pool = fitting if fitting and rng.random() < 0.85 else recent
        return rng.choice(pool) if pool else None

    def _verb(self, rng: random.Random, verb: str, states: frozenset[str], *extra: str) -> None:
        instance_id = self._known(rng, states)
        if instance_id is None:
            return
        code, out = self.cli(verb, instance_id, *extra, "--json")
        data = json.loads(out) if code == 0 and out.strip() else None
        with self.log.lock:
            self.log.acks.append(Ack(verb, instance_id, code, data, datetime.now(UTC)))
            if data is not None and "state" in data:
                self.seen[instance_id] = data["state"]

    def _pause(self, rng: random.Random) -> None:
        self._verb(rng, "pause", LIVE - {"PAUSED"})

    def _resume(self, rng: random.Random) -> None:
        self._verb(rng, "resume", frozenset({"PAUSED", "NEEDS_HUMAN_INTERVENTION"}))

    def _cancel(self, rng: random.Random) -> None:
        self._verb(rng, "cancel", LIVE)

    def _send(self, rng: random.Random) -> None:
        self._verb(rng, "send", LIVE - {"QUEUED", "PAUSED"}, "Hi, this is Ana from the depot")

    def _opt_out(self, rng: random.Random) -> None:
        """``relay contact opt-out``: after it returns nothing reaches the contact
        (beyond what it reported ``in_flight``) until the contact opts back in."""
        contact = rng.choice(self.contacts)
        code, out = self.cli("contact", "opt-out", contact, "--json")
        data = json.loads(out) if code == 0 and out.strip() else None
        with self.log.lock:
            self.log.acks.append(Ack("opt-out", contact, code, data, datetime.now(UTC)))

    def _tick(self, rng: random.Random) -> None:
        self.cli("tick", "--json")

    def _read(self, rng: random.Random) -> None:
        code, out = self.cli("list", "--limit", "30", "--json")
        if code == 0:
            with self.log.lock:
                self.seen.update((view["id"], view["state"]) for view in json.loads(out))
        self.cli("status", "--json")

    # -- settling -------------------------------------------------------------------------

    def _settle(self) -> bool:
        """Wait (polling, with a deadline) until no work is due or under way."""
        deadline = time.monotonic() + self.settings.settle_seconds
        while time.monotonic() < deadline:
            if not self.busy():
                return True
            for daemon in self.daemons:
                if not daemon.alive:
                    self.say(f"a daemon died while settling:\n{daemon.tail()}")
                    daemon.start()
            time.sleep(0.25)
        self.say(f"not settled after {self.settings.settle_seconds}s: {self.busy()}")
        return False

    def busy(self) -> list[str]:
        """What is still due or under way (empty: settled)."""
        now = datetime.now(UTC)
        with self.store.read_transaction() as session:
            due = count_due(session, now)
            position = session.scalar(
                select(ChannelCursor.position).where(ChannelCursor.channel == "console")
            )
            working = _count(
                session, Instance, Instance.state.in_([*claims.TURN_STATES, "WAITING_FOR_REPLY"])
            )
            sending = _count(
                session,
                Message,
                Message.status.in_(claims.OUTBOX_PENDING),
                Message.next_attempt_at.is_not(None),
            )
        size = self.inbox.stat().st_size if self.inbox.exists() else 0
        found = []
        if due:
            found.append(f"{due} item(s) of work due")
        if size and int(position or 0) < size:
            found.append(f"inbox read to byte {position} of {size}")
        if working:
            found.append(f"{working} instance(s) in a turn state or waiting for a reply")
        if sending:
            found.append(f"{sending} message(s) still to deliver")
        return found


def _count(session: Session, model: Any, *where: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


# -- the checks ------------------------------------------------------------------------------


def read_deliveries(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # a torn line (a writer killed mid-write) recorded nothing
    return records


#: Outbox statuses of a row a provider may have taken without relay recording it.
IN_DOUBT = frozenset({"sending", "unknown", "failed"})


def sms_deliveries(session: Session, sent: list[Any]) -> list[dict[str, Any]]:
    """What the fake Twilio took, as console deliveries read. Each create is the
    outbox row that recorded its sid (a send, or a reconciliation after a kill); a
    create no row recorded is matched by recipient and text (one contact's
    conversations can hold the same text): to a row in doubt no create matched
    yet, else it is a second delivery of a recorded one."""
    rows = session.execute(
        select(
            Message.id,
            Message.instance_id,
            Message.idempotency_key,
            Message.body,
            Message.provider_message_id,
            Message.status,
        )
        .add_columns(Contact.address)
        .join(Contact, Contact.id == Message.contact_id)
        .where(Message.direction == "outbound", Message.channel == "sms")
        .order_by(Message.id)
    ).all()
    by_sid = {row.provider_message_id: row for row in rows if row.provider_message_id}
    by_pair: defaultdict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in rows:
        by_pair[(row.address, row.body)].append(row)
    matched: set[int] = set()
    records = []
    for created in sorted(sent, key=lambda m: m.created):
        pair = (created.form.get("To", ""), created.form.get("Body", ""))
        row = by_sid.get(created.sid)
        if row is None:
            candidates = by_pair.get(pair) or []
            # Taken without its sid recorded: a row whose fate relay does not know...
            doubtful = [r for r in candidates if r.status in IN_DOUBT and r.id not in matched]
            # ... or a second delivery of one that was recorded.
            recorded = [r for r in candidates if r.provider_message_id]
            row = (doubtful or recorded or candidates or [None])[0]
        if row is None:
            continue  # nothing relay wrote (cannot happen; not counted)
        matched.add(row.id)
        records.append(
            {
                "message_id": row.id,
                "instance_id": row.instance_id,
                "idempotency_key": row.idempotency_key,
                "to": pair[0],
                "sent_at": _iso(created.created),
                "channel": "sms",
            }
        )
    return records


def _reconciled(session: Session) -> int:
    """Messages a crash left ``sending`` that the provider was found to have (recorded
    sent, not sent again): how often the harness hit the window it is about."""
    from relay.store.tables import events

    rows = session.execute(select(events.c.data).where(events.c.kind == "message.sent"))
    return sum(1 for (data,) in rows if isinstance(data, dict) and data.get("reconciled"))


def _extra(deliveries: list[dict[str, Any]]) -> int:
    """Deliveries beyond the first of each message."""
    return sum(n - 1 for n in Counter(d["message_id"] for d in deliveries).values() if n > 1)


def check(chaos: Chaos) -> tuple[list[str], dict[str, int]]:
    console = read_deliveries(chaos.outbox)
    problems: list[str] = []
    with chaos.store.read_transaction() as session:
        sent = list(chaos.twilio.sent) if chaos.twilio is not None else []
        sms = sms_deliveries(session, sent)
        # Each in its own order (the file's, Twilio's): a conversation is on one channel.
        deliveries = console + sms
        figures = {"deliveries": len(deliveries), "inbound": len(chaos.log.inbox)}
        figures["lost"] = _lost(session, chaos.log.inbox, problems)
        figures["duplicates"] = _duplicates(deliveries, problems)
        figures["duplicates_console"] = _extra(console)
        figures["duplicates_sms"] = _extra(sms)
        figures["unknown_fate"] = _count(session, Message, Message.status == "unknown")
        figures["reconciled"] = _reconciled(session)
        cancels, pauses = _after_acknowledged(session, deliveries, chaos.log.acks, problems)
        figures["post_cancel"], figures["post_pause"] = cancels, pauses
        figures["post_opt_out"] = _after_opt_out(session, deliveries, chaos.log.acks, problems)
        figures["out_of_order"] = _out_of_order(deliveries, problems)
        if figures["out_of_order"] and os.environ.get("CHAOS_ORDER_DETAIL"):
            _dump_order(session, deliveries, os.environ["CHAOS_ORDER_DETAIL"])
        figures["stranded"] = _stranded(session, datetime.now(UTC), problems)
    figures["doctor"] = _doctor(chaos, problems)
    return problems, figures


def _lost(session: Session, inbox: list[dict[str, str]], problems: list[str]) -> int:
    stored = Counter(
        session.scalars(
            select(Message.provider_message_id).where(
                Message.direction == "inbound", Message.channel == "console"
            )
        )
    )
    lost = [line["id"] for line in inbox if stored[line["id"]] == 0]
    doubled = [line["id"] for line in inbox if stored[line["id"]] > 1]
    if lost:
        problems.append(f"{len(lost)} inbox line(s) never stored: {lost[:5]}")
    if doubled:
        problems.append(f"{len(doubled)} inbox line(s) stored more than once: {doubled[:5]}")
    return len(lost) + len(doubled)


def _duplicates(deliveries: list[dict[str, Any]], problems: list[str]) -> int:
    keys = Counter(d["idempotency_key"] for d in deliveries)
    ids = Counter(d["message_id"] for d in deliveries)
    twice = [k for k, n in keys.items() if n > 1] + [
        f"message {i}" for i, n in ids.items() if n > 1
    ]
    if twice:
        problems.append(f"delivered more than once: {twice[:5]}")
    return len(twice)


#: Message columns written by :func:`_dump_order`.
_DUMPED = ("id", "instance_id", "direction", "status", "channel", "attempts", "created_at",
           "sent_at", "provider_message_id", "author", "idempotency_key")  # fmt: skip


def _dump_order(session: Session, deliveries: list[dict[str, Any]], path: str) -> None:
    """With ``CHAOS_ORDER_DETAIL=FILE``, a run that counted a message out of order
    writes what it saw (deliveries, outbox rows, events), one JSON object a line:
    the run's database is dropped with it."""
    from relay.store.tables import events

    with open(path, "w") as out:
        for delivery in deliveries:
            out.write("D " + json.dumps(delivery, default=str) + "\n")
        for message in session.scalars(select(Message).order_by(Message.id)):
            row = {column: getattr(message, column) for column in _DUMPED}
            out.write("M " + json.dumps(row, default=str) + "\n")
        for event in session.execute(select(events).order_by(events.c.id)).mappings():
            out.write("E " + json.dumps(dict(event), default=str) + "\n")


def _out_of_order(deliveries: list[dict[str, Any]], problems: list[str]) -> int:
    last: dict[str, int] = {}
    wrong = []
    for record in deliveries:
        instance_id = record.get("instance_id")
        if not instance_id:
            continue
        if record["message_id"] < last.get(instance_id, 0):
            wrong.append((instance_id, record["message_id"]))
            if os.environ.get("CHAOS_ORDER_DETAIL"):
                mine = [
                    (d["message_id"], d.get("channel"), d.get("sent_at"))
                    for d in deliveries
                    if d.get("instance_id") == instance_id
                ]
                problems.append(f"order detail {instance_id}: {mine}")
        last[instance_id] = max(last.get(instance_id, 0), record["message_id"])
    if wrong:
        problems.append(f"{len(wrong)} message(s) delivered before an earlier one: {wrong[:5]}")
    return len(wrong)


def _after_acknowledged(
    session: Session,
    deliveries: list[dict[str, Any]],
    acks: list[Ack],
    problems: list[str],
) -> tuple[int, int]:
    """Deliveries inside a [cancel, forever) or [pause, resume) window of the transition
    log, beyond what the acknowledgement of that cancel or pause reported in flight."""
    rows = session.execute(
        select(EventRow.instance_id, EventRow.event, EventRow.actor, EventRow.created_at)
        .where(EventRow.event.in_(["cancel", "pause", "resume"]))
        .order_by(EventRow.id)
    ).all()
    in_flight = {
        (a.instance_id, a.verb, a.data.get("updated_at")): int(a.data.get("in_flight") or 0)
        for a in acks
        if a.code == 0 and a.data is not None and a.verb in ("cancel", "pause")
    }
    sent: dict[str, list[datetime]] = defaultdict(list)
    for record in deliveries:
        if record.get("instance_id"):
            sent[record["instance_id"]].append(_parse(record["sent_at"]))
    counts = {"cancel": 0, "pause": 0}
    for start, end, row in _windows(rows):
        if row.actor != "operator":
            continue  # an opt-out's cancel of a queued instance; nothing was acknowledged
        inside = [t for t in sent[row.instance_id] if start < t and (end is None or t < end)]
        allowed = in_flight.get((row.instance_id, row.event, _iso(start)), 0)
        if len(inside) > allowed:
            counts[row.event] += len(inside) - allowed
            problems.append(
                f"instance {row.instance_id}: {len(inside)} delivery(ies) after its {row.event} "
                f"at {_iso(start)} (in flight: {allowed}): {[_iso(t) for t in inside][:3]}"
            )
    return counts["cancel"], counts["pause"]


def _after_opt_out(
    session: Session, deliveries: list[dict[str, Any]], acks: list[Ack], problems: list[str]
) -> int:
    """Deliveries to a contact after an acknowledged ``relay contact opt-out`` returned
    and before the contact opted back in (a START stored after it), beyond what the
    acknowledgement reported in flight."""
    starts: defaultdict[str, list[datetime]] = defaultdict(list)
    rows = session.execute(
        select(Contact.address, Message.created_at)
        .join(Contact, Contact.id == Message.contact_id)
        .where(Message.direction == "inbound", func.upper(Message.body) == "START")
    ).all()
    for address, at in rows:
        starts[address].append(_utc(at))
    late = 0
    for ack in acks:
        if ack.verb != "opt-out" or ack.code != 0 or ack.data is None:
            continue
        end = min((t for t in starts[ack.instance_id] if t > ack.returned_at), default=None)
        after = [
            d
            for d in deliveries
            if d.get("to") == ack.instance_id
            and _parse(d["sent_at"]) > ack.returned_at
            and (end is None or _parse(d["sent_at"]) < end)
        ]
        allowed = int(ack.data.get("in_flight") or 0)
        if len(after) > allowed:
            late += len(after) - allowed
            problems.append(
                f"{len(after)} deliveries to {ack.instance_id} after its opt-out returned at "
                f"{ack.returned_at.isoformat()} (in flight: {allowed}): "
                f"{[d['message_id'] for d in after]}"
            )
    return late


def _windows(rows: list[Any]) -> Iterable[tuple[datetime, datetime | None, Any]]:
    """(start, end, row) for each cancel (open-ended) and pause (until the next resume)."""
    by_instance: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_instance[row.instance_id].append(row)
    for items in by_instance.values():
        for index, row in enumerate(items):
            start = _utc(row.created_at)
            if row.event == "cancel":
                yield start, None, row
            elif row.event == "pause":
                later = [r for r in items[index + 1 :] if r.event == "resume"]
                yield start, (_utc(later[0].created_at) if later else None), row


def _stranded(session: Session, now: datetime, problems: list[str]) -> int:
    found = []
    instances = session.scalars(select(Instance).order_by(Instance.seq)).all()
    holders = {i.contact_id for i in instances if i.contact_slot is not None}
    for inst in instances:
        if inst.state == "QUEUED" and inst.contact_id not in holders:
            found.append(f"{inst.id} QUEUED with no live holder for its contact")
        elif inst.state in claims.TURN_STATES:
            found.append(f"{inst.id} {inst.state}: its turn never ran (lease {inst.lease_owner})")
        elif inst.state == "WAITING_FOR_REPLY" and (
            inst.next_heartbeat_at is None
            or _utc(inst.next_heartbeat_at) < now - timedelta(seconds=10)
        ):
            found.append(f"{inst.id} WAITING_FOR_REPLY with its heartbeat overdue")
    pending = session.execute(
        select(Message.id, Message.instance_id, Message.status).where(
            Message.status.in_(claims.OUTBOX_PENDING),
            Message.next_attempt_at.is_not(None),
            Message.next_attempt_at < now - timedelta(seconds=10),
        )
    ).all()
    found += [f"message {m.id} ({m.instance_id}) still {m.status}" for m in pending]
    if found:
        problems.append(f"{len(found)} stranded: {found[:8]}")
    return len(found)


def _doctor(chaos: Chaos, problems: list[str]) -> int:
    code, out = chaos.cli("doctor", "--json")
    try:
        findings = json.loads(out)["findings"]
    except (ValueError, KeyError):
        problems.append(f"relay doctor --json exited {code} without a report")
        return 1
    if findings:
        problems.append(f"relay doctor: {findings[:5]}")
    return len(findings)


def _parse(text: str) -> datetime:
    return _utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _iso(value: datetime) -> str:
    return _utc(value).isoformat().replace("+00:00", "Z")
