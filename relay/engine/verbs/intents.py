"""``[intent]``: each new reply labelled by the classifier before it is stored.

The call is made here, before the ingest transaction opens, so no lock or
transaction is held while the model thinks; the label travels on the
:class:`~relay.channels.base.Inbound` into the one transaction that stores the
message (and, for ``opt_out`` with ``[intent] opt_out``, opts the contact out
there, like a STOP). Only :func:`relay.engine.verbs.incoming.ingest` and
``receive`` call this module, and only when ``[intent] enabled``: off, nothing
here (nor httpx) is imported.

The rules come first and stay the fallback: a reply they read as an opt-out is
labelled ``opt_out`` without a call; when the server is down, slow, refuses or
answers something that is no label, the reply's label stays null and the rules
decide alone, with one log line, and the classifier rests for :data:`REST`
(a server that hangs must not hold every poll up by its timeout).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary
from zoneinfo import ZoneInfo

from relay.channels.base import Inbound, Incoming
from relay.core.intents import RULES_OPT_OUT, Intent
from relay.core.values import InboundKind
from relay.engine.inbound import ingest as inbound
from relay.store import arrivals

if TYPE_CHECKING:
    from relay.agents.intent import IntentClassifier
    from relay.engine.runtime import Runtime
    from relay.store.database import Store

log = logging.getLogger("relay.intent")

#: After a failure the classifier is not asked again for this long.
REST = timedelta(minutes=1)
#: Until when the classifier at a URL rests (by the runtime's clock), per open store:
#: one daemon's process, one test's relay.
_resting: WeakKeyDictionary[Store, dict[str, datetime]] = WeakKeyDictionary()


def labelled(rt: Runtime, channel: str, incoming: Incoming, words: inbound.Keywords) -> Incoming:
    """``incoming`` with each reply not stored before given its intent: the rules'
    opt-outs at once, the others asked about :data:`PARALLEL` at a time."""
    labeller = _Labeller(rt, words, _stored(rt, channel, incoming.messages))
    ruled = [labeller.by_rules(item) for item in incoming.messages]
    asking = [i for i, found in enumerate(ruled) if found is ASK]
    answers = labeller.ask_all([incoming.messages[i].text for i in asking])
    intents = [None if found is ASK else found for found in ruled]
    for i, answer in zip(asking, answers, strict=True):
        intents[i] = answer
    messages = [_with(item, intents[i]) for i, item in enumerate(incoming.messages)]
    return replace(incoming, messages=messages)


def label_of(rt: Runtime, text: str, words: inbound.Keywords) -> Intent | None:
    """The intent of one reply given by hand (``relay receive``)."""
    labeller = _Labeller(rt, words)
    found = labeller.by_rules(Inbound(sender="", text=text))
    return labeller.ask(text) if found is ASK else found


def _with(item: Inbound, intent: Intent | None) -> Inbound:
    return item if intent is None else replace(item, intent=intent)


def _stored(rt: Runtime, channel: str, items: Sequence[Inbound]) -> frozenset[str]:
    """The provider ids among ``items`` stored already (a poll read again): not asked twice."""
    replies = (item for item in items if item.kind == InboundKind.MESSAGE)
    ids = {pid for item in replies if (pid := inbound.provider_id(item.provider_message_id))}
    if not ids:
        return frozenset()
    with rt.store.read_transaction() as session:
        return frozenset(i for i in ids if arrivals.inbound_by_provider_id(session, channel, i))


class _Ask(Enum):
    """:meth:`_Labeller.by_rules`: the reply goes to the classifier."""

    ASK = "ask"


ASK = _Ask.ASK
#: Replies asked about at once: a batch costs about one round trip per this many.
PARALLEL = 4


@dataclass
class _Labeller:
    rt: Runtime
    words: inbound.Keywords
    stored: frozenset[str] = frozenset()
    client: IntentClassifier | None = None
    #: The server failed during this batch: the rules decide for the rest of it.
    failed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def by_rules(self, item: Inbound) -> Intent | _Ask | None:
        """The rules' label (an opt-out), None for no label, or :data:`ASK`."""
        if item.kind != InboundKind.MESSAGE or item.bind_token or not item.text.strip():
            return None  # not a reply (auto-replies, bounces, complaints keep their kind)
        if inbound.provider_id(item.provider_message_id) in self.stored:
            return None
        if inbound.opts_out(item.kind, item.text, self.words):
            return RULES_OPT_OUT
        return ASK

    def ask_all(self, texts: list[str]) -> list[Intent | None]:
        """The first alone (a server that is away costs one try), then the rest in parallel."""
        if len(texts) < 2:
            return [self.ask(text) for text in texts]
        first = self.ask(texts[0])
        with ThreadPoolExecutor(PARALLEL, thread_name_prefix="relay-intent") as pool:
            return [first, *pool.map(self.ask, texts[1:])]

    def ask(self, text: str) -> Intent | None:
        now = self.rt.now()
        url = str(self.rt.config.get("agent.openai.base_url") or "")
        resting = _resting.setdefault(self.rt.store, {})
        if self.failed or resting.get(url, now) > now:
            return None
        try:
            return self.classifier().classify(text, _today(self.rt, now))
        except Exception as exc:  # whatever the server or its client does: the rules decide
            with self.lock:
                told, self.failed = self.failed, True
            resting[url] = now + REST
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if not told:  # one line for the batch
                log.warning("intent classifier: %s; the rules decide alone for now", reason)
            return None

    def classifier(self) -> IntentClassifier:
        with self.lock:
            if self.client is None:
                from relay.agents.intent import IntentClassifier

                settings = self.rt.config.settings.intent
                self.client = IntentClassifier.from_settings(
                    self.rt.config.section("agent.openai"),
                    model=settings.model,
                    timeout=settings.timeout.total_seconds(),
                )
            return self.client


def _today(rt: Runtime, now: datetime) -> date:
    """Today where the contacts are (``[defaults] timezone``): "tomorrow" is read from it."""
    try:
        return now.astimezone(ZoneInfo(rt.config.settings.defaults.timezone)).date()
    except (KeyError, ValueError):
        return now.date()
