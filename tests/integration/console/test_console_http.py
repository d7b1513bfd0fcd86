"""The console over HTTP (httpx against uvicorn on loopback): access, the pages
and their filters, the actions through the API, the event stream."""

from __future__ import annotations

import json
import re

import pytest
from console_support import MARKUP_NAME, OPERATOR_TOKEN, READONLY_TOKEN, Served, csrf_of


def states_on(html: str) -> list[str]:
    return re.findall(r'class="state state-([A-Z_]+)"', html)


# -- access ---------------------------------------------------------------------------------


def test_nothing_without_a_session(served: Served) -> None:
    some_id = served.ids["+15551230003"]
    with served.client() as client:
        page = client.get("/ui/")
        assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
        assert client.get(f"/ui/c/{some_id}").status_code == 303
        assert client.get("/ui/events").status_code == 401
        forged = client.post(f"/ui/c/{some_id}/cancel", data={"csrf": "x"})
        assert forged.status_code == 401
    assert served.relay.get(some_id).state != "FAILED"


def test_a_wrong_token_or_a_missing_login_csrf_is_refused(served: Served) -> None:
    with served.client() as client:
        page = client.get("/ui/login")
        wrong = client.post("/ui/login", data={"csrf": csrf_of(page.text), "token": "guess"})
        assert wrong.status_code == 403 and "relay_console=" not in wrong.headers.get(
            "set-cookie", ""
        )
        no_csrf = client.post("/ui/login", data={"token": OPERATOR_TOKEN})
        assert no_csrf.status_code == 403


def test_ten_wrong_tokens_lock_the_client_out_even_with_the_right_one(served: Served) -> None:
    with served.client() as client:
        csrf = csrf_of(client.get("/ui/login").text)
        for _ in range(10):
            wrong = client.post("/ui/login", data={"csrf": csrf, "token": "guess"})
            assert wrong.status_code == 403
        right = client.post("/ui/login", data={"csrf": csrf, "token": OPERATOR_TOKEN})
        assert right.status_code == 429 and "Too many failed sign-ins" in right.text
        assert "relay_console=" not in right.headers.get("set-cookie", "")


def test_the_session_cookie_is_httponly_samesite_and_signed(served: Served) -> None:
    with served.client() as client:
        page = client.get("/ui/login")
        answer = client.post(
            "/ui/login", data={"csrf": csrf_of(page.text), "token": OPERATOR_TOKEN}
        )
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/ui" in cookie
        # Over plain HTTP (loopback) the cookie cannot be Secure; behind TLS it is.
        assert "Secure" not in cookie
        value = client.cookies["relay_console"]
        payload, signature = value.rsplit(".", 1)
        tampered = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + signature
        client.cookies.set("relay_console", tampered, path="/ui")
        assert client.get("/ui/").status_code == 303


def test_behind_tls_the_cookie_is_secure(served: Served) -> None:
    with served.client() as client:
        headers = {"X-Forwarded-Proto": "https"}
        page = client.get("/ui/login", headers=headers)
        assert "Secure" in page.headers["set-cookie"]
        # httpx keeps a Secure cookie for https only; a browser behind TLS sends it.
        login = page.headers["set-cookie"].split(";")[0]
        client.cookies.clear()
        answer = client.post(
            "/ui/login",
            data={"csrf": csrf_of(page.text), "token": OPERATOR_TOKEN},
            headers={**headers, "Cookie": login},
        )
        assert "Secure" in answer.headers["set-cookie"]


def test_a_read_only_user_sees_no_actions_and_a_forged_post_is_refused(served: Served) -> None:
    target = served.ids["+15551230003"]
    with served.signed_in(READONLY_TOKEN) as client:
        page = client.get(f"/ui/c/{target}")
        assert page.status_code == 200
        assert "/pause" not in page.text and 'id="send-text"' not in page.text
        needs = client.get("/ui/needs")
        assert "Send and resume" not in needs.text
        csrf = csrf_of(page.text)  # the sign-out form's: a valid token of this session
        for verb, data in (("pause", {}), ("send", {"text": "hello"}), ("cancel", {})):
            forged = client.post(f"/ui/c/{target}/{verb}", data={"csrf": csrf, **data})
            assert forged.status_code == 403, verb
    assert served.relay.get(target).state == "WAITING_FOR_REPLY"
    assert all(m.author != "operator" for m in served.relay.transcript(target))


def test_a_post_without_the_csrf_token_is_refused(served: Served) -> None:
    target = served.ids["+15551230003"]
    with served.signed_in(OPERATOR_TOKEN) as client:
        assert client.post(f"/ui/c/{target}/pause", data={}).status_code == 403
        assert client.post(f"/ui/c/{target}/pause", data={"csrf": "x" * 32}).status_code == 403
    assert served.relay.get(target).state == "WAITING_FOR_REPLY"


def test_contact_text_is_escaped(served: Served) -> None:
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get("/ui/", params={"campaign": "spring-renewals"})
        assert MARKUP_NAME not in page.text
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Mallory" in page.text
        one = client.get(f"/ui/c/{served.ids['+15551230005']}")
        assert "<script>alert" not in one.text


# -- the list ---------------------------------------------------------------------------------


def test_the_list_filters_by_state_campaign_channel_contact_and_text(served: Served) -> None:
    with served.signed_in(OPERATOR_TOKEN) as client:
        everything = client.get("/ui/")
        assert len(states_on(everything.text)) == 9
        needs = client.get("/ui/", params={"state": "NEEDS_HUMAN_INTERVENTION"})
        assert states_on(needs.text) == ["NEEDS_HUMAN_INTERVENTION"] * 2
        campaign = client.get("/ui/", params={"campaign": "depot-deliveries"})
        assert campaign.text.count('data-id="') == 3 and "Gus Lindqvist" in campaign.text
        by_name = client.get("/ui/", params={"contact": "chloé"})
        assert by_name.text.count('data-id="') == 1 and "+15551230003" in by_name.text
        by_address = client.get("/ui/", params={"contact": "(555) 123-0006"})
        assert by_address.text.count('data-id="') == 1 and "Farah Haddad" in by_address.text
        by_text = client.get("/ui/", params={"q": "DELIVERY SLOT", "channel": "console"})
        assert by_text.text.count('data-id="') == 3
        nothing = client.get("/ui/", params={"channel": "sms"})
        assert "No conversations match." in nothing.text
        bad = client.get("/ui/", params={"state": "SLEEPING"})
        assert bad.status_code == 400 and "unknown state" in bad.text


def test_each_row_has_name_address_state_objective_last_message_and_next(served: Served) -> None:
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get("/ui/", params={"contact": "Farah"})
    row = page.text
    assert "Farah Haddad" in row and "+15551230006" in row
    assert "state-WAITING_FOR_REPLY" in row
    assert "the renewal of Farah Haddad&#39;s plan" in row
    assert "Do you want to renew" in row  # the last message: the agent's question
    assert re.search(r'class="next">follow-up \d{4}-\d\d-\d\d \d\d:\d\d UTC<', row)


def test_sorting_and_paging_are_done_in_sql(served: Served) -> None:
    from relay.store import console_reads
    from relay.store.console_reads import PageQuery

    with served.relay.store.read_transaction() as session:
        first, more = console_reads.conversations_page(
            session, PageQuery(sort="created", page=1, size=4)
        )
        second, _ = console_reads.conversations_page(
            session, PageQuery(sort="created", page=2, size=4)
        )
        third, last_more = console_reads.conversations_page(
            session, PageQuery(sort="created", page=3, size=4)
        )
    assert more and not last_more
    seqs = [r.seq for r in (*first, *second, *third)]
    assert len(seqs) == 9 and seqs == sorted(seqs, reverse=True)
    with served.signed_in(OPERATOR_TOKEN) as client:
        by_state = client.get("/ui/", params={"sort": "state"})
        assert states_on(by_state.text) == sorted(states_on(by_state.text))
        assert client.get("/ui/", params={"sort": "nonsense"}).status_code == 400


# -- a conversation and its actions ------------------------------------------------------------


def test_a_conversation_shows_transcript_todos_history_and_next(served: Served) -> None:
    instance_id = served.ids["+15551230001"]
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get(f"/ui/c/{instance_id}").text
    assert "Ana Lima" in page and "Yes, renew it please." in page
    assert 'class="msg msg-inbound' in page and 'class="msg msg-outbound' in page
    assert "Do you want to renew for another year?" in page
    assert "ACTIVE → WAITING_FOR_REPLY" in page or "→ COMPLETED" in page
    assert 'id="next"' in page


def test_actions_go_through_the_api_and_a_refusal_is_shown(served: Served) -> None:
    instance_id = served.ids["+15551230006"]
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get(f"/ui/c/{instance_id}")
        csrf = csrf_of(page.text)
        paused = client.post(f"/ui/c/{instance_id}/pause", data={"csrf": csrf})
        assert paused.status_code == 303
        assert served.relay.get(instance_id).state == "PAUSED"
        again = client.post(f"/ui/c/{instance_id}/pause", data={"csrf": csrf})
        assert again.status_code == 409
        assert "Refused:" in again.text and "PAUSED" in again.text
        client.post(f"/ui/c/{instance_id}/resume", data={"csrf": csrf})
        assert served.relay.get(instance_id).state == "WAITING_FOR_REPLY"
        sent = client.post(f"/ui/c/{instance_id}/send", data={"csrf": csrf, "text": "Hi <b>"})
        assert sent.status_code == 303
        client.post(f"/ui/c/{instance_id}/cancel", data={"csrf": csrf})
        assert served.relay.get(instance_id).state == "FAILED"
        refused = client.post(f"/ui/c/{instance_id}/resume", data={"csrf": csrf})
        assert refused.status_code == 409 and "FAILED" in refused.text
    said = [m for m in served.relay.transcript(instance_id) if m.author == "operator"]
    assert [m.text for m in said] == ["Hi <b>"]
    history = served.relay.history(instance_id, commands=True)
    assert {"pause", "resume", "send", "cancel"} <= {h.event for h in history}
    assert {h.actor for h in history if h.kind == "command"} == {"console"}


def test_needs_a_person_lists_oldest_first_and_an_answer_resumes(served: Served) -> None:
    ben, hana = served.ids["+15551230002"], served.ids["hana@example.org"]
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get("/ui/needs")
        order = re.findall(r'<article class="needs" data-id="([^"]+)"', page.text)
        assert order == [ben, hana]
        assert "Why:" in page.text
        answer = client.post(
            f"/ui/c/{ben}/send",
            data={"csrf": csrf_of(page.text), "from": "needs", "text": "Ben, I can do 10% off."},
        )
        assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/needs")
        after = client.get("/ui/needs")
    assert served.relay.get(ben).state == "WAITING_FOR_REPLY"
    assert re.findall(r'<article class="needs" data-id="([^"]+)"', after.text) == [hana]


def test_the_campaigns_page_draws_the_funnel_of_relay_stats(served: Served) -> None:
    stats = served.relay.stats(campaign="spring-renewals")
    with served.signed_in(OPERATOR_TOKEN) as client:
        page = client.get("/ui/campaigns", params={"campaign": "spring-renewals"}).text
    for name, value in (("started", stats.started), ("delivered", stats.delivered),
                        ("replied", stats.replied),
                        ("opted_out", stats.outcomes["opted_out"])):  # fmt: skip
        assert f'id="funnel-{name}">{value}<' in page
    assert stats.started == 6 and stats.outcomes["opted_out"] == 1
    assert "<svg" in page and "First replies per day" in page and 'id="median"' in page


# -- live updates -------------------------------------------------------------------------------


def test_the_event_stream_resumes_from_the_cursor(served: Served) -> None:
    instance_id = served.ids["+15551230003"]
    cursor = served.relay.events(limit=100000)[-1].id
    served.relay.receive("+15551230003", "Sorry for the wait: yes.", channel="console")
    with (
        served.signed_in(READONLY_TOKEN) as client,
        client.stream("GET", "/ui/events", headers={"Last-Event-ID": str(cursor)}) as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        seen = []
        for line in stream.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                break
    assert seen == [{"kind": "message.received", "instance_id": instance_id}]


@pytest.mark.parametrize("path", ["/ui/c/nope", "/ui/c/nope/pause"])
def test_an_unknown_conversation_is_404(served: Served, path: str) -> None:
    with served.signed_in(OPERATOR_TOKEN) as client:
        csrf = csrf_of(client.get("/ui/").text)
        answer = (
            client.post(path, data={"csrf": csrf}) if path.endswith("pause") else client.get(path)
        )
        assert answer.status_code == 404


def test_the_notice_after_an_action_is_never_text_from_a_link(served: Served) -> None:
    with served.signed_in(OPERATOR_TOKEN) as client:
        shown = client.get("/ui/needs", params={"done": "paused"})
        assert 'id="flash">Paused.<' in shown.text
        crafted = client.get("/ui/needs", params={"done": "call +1 555 0100 now"})
        assert "call +1 555 0100" not in crafted.text
