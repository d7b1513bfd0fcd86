"""Drafts a person approves, in the console: the conversation page's Approve and
Reject, and what Needs a person lists (see relay.engine.verbs.drafts).

The verbs are :class:`relay.api.Relay`'s (``drafts``, ``approve``, ``reject``),
the ones ``relay drafts``, ``relay approve`` and ``relay reject`` call, so a
draft already decided, or withdrawn by a cancel or an opt-out, is refused in
the same words. The console is mounted by ``relay serve``, below the facade in
the layers, so it names those three methods here (:class:`Approvals`) instead of
importing it; :func:`relay.console.app.build` checks the Relay it is given has
them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from relay.core.errors import InvalidInput
from relay.store import draft_rows, queries

if TYPE_CHECKING:
    from relay.engine.verbs.drafts import DraftView
    from relay.engine.verbs.service import Relay
    from relay.engine.views.instances import MessageView

#: How many drafts Needs a person lists (the oldest; ``relay drafts`` has them all).
LISTED = 50


@runtime_checkable
class Approvals(Protocol):
    """The draft verbs of :class:`relay.api.Relay`."""

    def drafts(self, instance_id: str | None = None) -> list[DraftView]: ...

    def approve(self, message_id: int, *, text: str | None = None) -> MessageView: ...

    def reject(self, message_id: int, *, reason: str) -> MessageView: ...


def action(
    relay: Relay, approvals: Approvals, verb: str, instance_id: str, form: Mapping[str, str]
) -> Callable[[], Any]:
    """``approve`` or ``reject`` the draft the form names, once it is known to be one
    of this conversation's messages (a form cannot reach another conversation's)."""
    message_id = _message_id(relay, instance_id, form.get("message"))
    if verb == "approve":
        # A browser sends a textarea's line breaks as CRLF: an unchanged draft is
        # approved as written, not recorded as an edit.
        text = (form.get("text") or "").replace("\r\n", "\n")
        return lambda: approvals.approve(message_id, text=text if text.strip() else None)
    reason = form.get("reason") or ""
    return lambda: approvals.reject(message_id, reason=reason)


def _message_id(relay: Relay, instance_id: str, given: str | None) -> int:
    text = (given or "").strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"a message id is a positive whole number, not {text!r}")
    message_id = int(text)
    with relay.store.read_transaction() as session:
        conversation = queries.resolve_instance(session, instance_id).id
        owner = draft_rows.instance_of(session, message_id)
    if owner is not None and owner != conversation:
        raise InvalidInput(f"message {message_id} is not in conversation {conversation}")
    return message_id


def awaiting(approvals: Approvals) -> tuple[list[DraftView], int]:
    """The oldest drafts awaiting approval (at most :data:`LISTED`), and how many in all."""
    found = approvals.drafts()
    return found[:LISTED], len(found)
