"""Drafts a person approves, in the console: the conversation page's Approve and
Reject, and what Needs a person lists (see relay.engine.verbs.drafts).

The verbs are the ones :class:`relay.api.Relay`'s ``drafts``, ``approve`` and
``reject`` delegate to (so do ``relay drafts``, ``relay approve`` and ``relay
reject``), run as the console's actor: a draft already decided, or withdrawn
by a cancel or an opt-out, is refused in the same words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from relay.core.errors import InvalidInput
from relay.engine.verbs import drafts
from relay.store import draft_rows, instances

if TYPE_CHECKING:
    from relay.engine.runtime import Context, Runtime
    from relay.engine.verbs.drafts import DraftView

#: How many drafts Needs a person lists (the oldest; ``relay drafts`` has them all).
LISTED = 50


def action(
    relay: Context, verb: str, instance_id: str, form: Mapping[str, str]
) -> Callable[[], Any]:
    """``approve`` or ``reject`` the draft the form names, once it is known to be one
    of this conversation's messages (a form cannot reach another conversation's)."""
    message_id = _message_id(relay, instance_id, form.get("message"))
    if verb == "approve":
        # A browser sends a textarea's line breaks as CRLF: an unchanged draft is
        # approved as written, not recorded as an edit.
        text = (form.get("text") or "").replace("\r\n", "\n")
        edited = text if text.strip() else None
        return lambda: drafts.approve(relay, message_id, actor=relay.who(), text=edited)
    reason = form.get("reason") or ""
    return lambda: drafts.reject(relay, message_id, actor=relay.who(), reason=reason)


def _message_id(relay: Runtime, instance_id: str, given: str | None) -> int:
    text = (given or "").strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"a message id is a positive whole number, not {text!r}")
    message_id = int(text)
    with relay.store.read_transaction() as session:
        conversation = instances.resolve(session, instance_id).id
        owner = draft_rows.instance_of(session, message_id)
    if owner is not None and owner != conversation:
        raise InvalidInput(f"message {message_id} is not in conversation {conversation}")
    return message_id


def awaiting(relay: Runtime) -> tuple[list[DraftView], int]:
    """The oldest drafts awaiting approval (at most :data:`LISTED`), and how many in all."""
    found = drafts.pending(relay)
    return found[:LISTED], len(found)
