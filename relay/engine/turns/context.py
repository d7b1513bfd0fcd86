"""A turn's context: what the agent sees, read for a batch of claimed turns at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Row

from relay.core.clock import isoformat
from relay.core.turns import (
    TURN_REASONS,
    ContextMessage,
    TurnContext,
    TurnReason,
)
from relay.engine.conversation import scoped_state
from relay.engine.turns import answers
from relay.store import queries, turn_rows
from relay.store.models import Message

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


REASONS = {state.value: reason for state, reason in TURN_REASONS.items()}


def read_contexts(
    relay: Runtime, owner: str, claimed: list[tuple[str, int]]
) -> dict[str, tuple[TurnContext, str, int]]:
    """Each claimed turn's context, agent name and attempt count, read in one
    transaction. A turn whose claim is no longer ours is left out: the instance
    changed, or the lease ran out and another worker claimed it (running the
    agent then would only waste a model call, or repeat a command's effects)."""
    window = relay.config.settings.agent.transcript_window
    versions = dict(claimed)
    with relay.store.transaction() as session:
        # Plain rows throughout: nothing read here is changed, and ORM objects
        # for a batch's instances, todos and transcripts cost more than the SQL.
        instances = [
            row
            for row in turn_rows.context_rows(session, versions)
            if row.state in REASONS and row.version == versions[row.id] and row.lease_owner == owner
        ]
        ids = [row.id for row in instances]
        todos = queries.todo_rows_for(session, ids)
        transcripts = turn_rows.transcripts_for(session, ids, window, said_only=True)
        inbound = turn_rows.inbound_rows_for(session, ids)
        states = scoped_state.load(session, instances)
        now = isoformat(relay.now()) or ""
        found = {}
        for row in instances:
            reason = REASONS[row.state]
            context = TurnContext(
                instance_id=row.id,
                reason=reason,
                objective=row.objective,
                contact=row.address,
                todos=tuple(answers.context_todo(t) for t in todos[row.id]),
                transcript=tuple(_context_message(m) for m in transcripts[row.id]),
                new_messages=tuple(_context_message(m) for m in inbound[row.id]),
                state=states[row.id],
                follow_up_number=(row.follow_up_count + 1 if reason is TurnReason.FOLLOW_UP else 0),
                max_followups=row.max_followups,
                now=now,
                result_schema=row.result_schema,
                contact_fields=dict(row.fields or {}),
                campaign=row.campaign,
            )
            found[row.id] = (context, row.agent, row.turn_attempts)
        return found


def _context_message(message: Message | Row[Any]) -> ContextMessage:
    return ContextMessage(
        id=message.id,
        direction=message.direction,
        author=message.author,
        text=message.body,
        at=isoformat(message.created_at) or "",
    )
