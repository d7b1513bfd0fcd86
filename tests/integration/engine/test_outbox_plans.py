"""PostgreSQL asks "still in the outbox?" conversation by conversation
(:func:`relay.store.due.undelivered`), never as a join over the pending
messages: planned with the statistics of a quiet outbox, that join compared
every candidate with every pending row once a burst had thousands pending."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from backends import POSTGRES_ONLY
from sqlalchemy import select, text

from relay.store.due import undelivered
from relay.store.tables import instances
from relay.testing import Harness

pytestmark = POSTGRES_ONLY


@pytest.mark.parametrize("negated", [True, False], ids=["heartbeat claim", "pending of"])
def test_the_outbox_check_is_a_probe_per_conversation_not_a_join(
    make_engine: Callable[..., Harness], clock: Any, negated: bool
) -> None:
    engine = make_engine()
    for n in range(5):
        engine.start(f"+1555030000{n}")
    engine.tick()
    clock.advance(timedelta(hours=1))
    pending = undelivered(instances.c.id)
    query = select(instances.c.id).where(
        instances.c.state == "WAITING_FOR_REPLY", ~pending if negated else pending
    )
    sql = str(query.compile(engine.relay.store.engine, compile_kwargs={"literal_binds": True}))
    with engine.relay.store.engine.connect() as conn:
        conn.execute(text("ANALYZE messages"))  # a quiet outbox: nothing pending
        plan = "\n".join(row[0] for row in conn.execute(text(f"EXPLAIN {sql}")))

    assert "SubPlan" in plan, plan
    assert "Join" not in plan, plan
