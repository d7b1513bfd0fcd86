"""Drafts a person approves, in the console (httpx against uvicorn on loopback, on
SQLite and PostgreSQL): the conversation page shows the draft with Approve and
Reject for an operator, the lists say a draft awaits approval, both go through
the API (a decided draft is refused in ``relay approve``'s words), and a
read-only user or a forged POST changes nothing."""

from __future__ import annotations

import re

import pytest
from console_support import OPERATOR_TOKEN, READONLY_TOKEN, Served, csrf_of
from markupsafe import escape

from relay.core.errors import Refused

CONTACT = "+15551239901"


def with_a_draft(
    served: Served, contact: str = CONTACT, approval: str = "first"
) -> tuple[str, int]:
    """A conversation whose agent's first message waits for approval, and the draft's id."""
    started = served.relay.start(
        contact, "the renewal of Olu's plan", ["Do you want to renew?::yesno"], approval=approval
    )
    served.relay.run_due(poll=False)
    (draft,) = served.relay.drafts(started.id)
    return started.id, draft.id


def statuses(served: Served, instance_id: str) -> list[tuple[int, str, str]]:
    return [
        (m.id, m.status, m.text)
        for m in served.relay.transcript(instance_id)
        if m.direction == "outbound"
    ]


def test_the_page_shows_the_draft_and_the_lists_say_it_awaits_approval(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served)
    draft_text = served.relay.drafts(instance_id)[0].text
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get(f"/ui/c/{instance_id}").text
        listed = client.get("/ui/", params={"contact": CONTACT}).text
        needs = client.get("/ui/needs").text
    assert f'id="approve-{draft_id}"' in page and f'id="reject-{draft_id}"' in page
    assert f'id="draft-text-{draft_id}" name="text" rows="4" required>' in page
    assert "draft: awaits approval" in page and "msg-draft" in page
    assert "1 draft(s) await approval" in page  # relay show's words for what comes next
    assert re.search(r'class="next">a draft awaits approval<', listed)
    assert f'data-draft="{draft_id}" data-id="{instance_id}"' in needs
    assert 'id="drafts-note"><a href="#drafts">1 draft awaits approval</a>' in needs
    assert "Drafts awaiting approval (1)" in needs and escape(draft_text[:40]) in needs


def test_an_operator_approves_and_the_message_goes_out(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served)
    text = served.relay.drafts(instance_id)[0].text
    with served.signed_in(OPERATOR_TOKEN) as client:
        csrf = csrf_of(client.get(f"/ui/c/{instance_id}").text)
        # A browser sends the textarea's line breaks as CRLF: unchanged, not an edit.
        answer = client.post(
            f"/ui/c/{instance_id}/approve",
            data={"csrf": csrf, "message": str(draft_id), "text": text.replace("\n", "\r\n")},
        )
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/ui/c/{instance_id}?done=draft+approved+and+queued"
        shown = client.get(answer.headers["location"]).text
        assert 'id="flash">Draft approved and queued.<' in shown
        assert f'id="approve-{draft_id}"' not in shown
        # Approved twice (a stale page): the API refuses, the page says why, 409.
        again = client.post(
            f"/ui/c/{instance_id}/approve", data={"csrf": csrf, "message": str(draft_id)}
        )
        assert again.status_code == 409
        assert f"Refused: message {draft_id} is queued, not a draft awaiting approval" in again.text
    assert served.relay.drafts() == []
    assert statuses(served, instance_id) == [(draft_id, "queued", text)]
    served.relay.run_due(poll=False)
    assert statuses(served, instance_id) == [(draft_id, "sent", text)]
    approvals = [
        h for h in served.relay.history(instance_id, commands=True) if h.event == "approve"
    ]
    assert [h.actor for h in approvals] == ["console"]


def test_an_edited_draft_goes_out_as_edited(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served)
    with served.signed_in(OPERATOR_TOKEN) as client:
        csrf = csrf_of(client.get(f"/ui/c/{instance_id}").text)
        answer = client.post(
            f"/ui/c/{instance_id}/approve",
            data={"csrf": csrf, "message": str(draft_id), "text": "Hi Olu: renew for 2027?"},
        )
        assert answer.status_code == 303
    served.relay.run_due(poll=False)
    (draft, sent) = statuses(served, instance_id)
    assert draft[:2] == (draft_id, "edited")
    assert sent[1:] == ("sent", "Hi Olu: renew for 2027?")


def test_an_operator_rejects_with_a_reason_and_the_agent_writes_anew(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served, approval="all")
    with served.signed_in(OPERATOR_TOKEN) as client:
        csrf = csrf_of(client.get(f"/ui/c/{instance_id}").text)
        no_reason = client.post(
            f"/ui/c/{instance_id}/reject", data={"csrf": csrf, "message": str(draft_id)}
        )
        assert no_reason.status_code == 400 and "reason must not be empty" in no_reason.text
        answer = client.post(
            f"/ui/c/{instance_id}/reject",
            data={"csrf": csrf, "message": str(draft_id), "reason": "Too pushy; ask gently."},
        )
        assert answer.status_code == 303 and "done=draft+rejected" in answer.headers["location"]
    assert statuses(served, instance_id)[0][:2] == (draft_id, "rejected")
    served.relay.run_due(poll=False)
    (new,) = served.relay.drafts(instance_id)
    assert new.id != draft_id
    with pytest.raises(Refused):
        served.relay.approve(draft_id)


def test_a_read_only_user_sees_no_buttons_and_a_forged_post_is_refused(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served)
    with served.signed_in(READONLY_TOKEN) as client:
        page = client.get(f"/ui/c/{instance_id}").text
        assert "draft: awaits approval" in page  # seen, not decided
        assert f'id="approve-{draft_id}"' not in page and "/reject" not in page
        csrf = csrf_of(page)  # the sign-out form's: a valid token of this session
        for verb in ("approve", "reject"):
            forged = client.post(
                f"/ui/c/{instance_id}/{verb}",
                data={"csrf": csrf, "message": str(draft_id), "reason": "no"},
            )
            assert forged.status_code == 403, verb
    with served.signed_in(OPERATOR_TOKEN) as client:
        missing = client.post(f"/ui/c/{instance_id}/approve", data={"message": str(draft_id)})
        assert missing.status_code == 403
    assert [d.id for d in served.relay.drafts(instance_id)] == [draft_id]


def test_a_form_cannot_decide_another_conversations_draft(served: Served) -> None:
    instance_id, draft_id = with_a_draft(served)
    other = served.ids["+15551230006"]
    with served.signed_in(OPERATOR_TOKEN) as client:
        csrf = csrf_of(client.get(f"/ui/c/{other}").text)
        wrong = client.post(f"/ui/c/{other}/approve", data={"csrf": csrf, "message": str(draft_id)})
        assert wrong.status_code == 400 and "is not in conversation" in wrong.text
        bad = client.post(f"/ui/c/{instance_id}/approve", data={"csrf": csrf, "message": "x1"})
        assert bad.status_code == 400
        unknown = client.post(
            f"/ui/c/{instance_id}/approve", data={"csrf": csrf, "message": "99999"}
        )
        assert unknown.status_code == 404
    assert [d.id for d in served.relay.drafts(instance_id)] == [draft_id]
