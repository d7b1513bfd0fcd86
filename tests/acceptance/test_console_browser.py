"""The console in a real browser: ``relay serve`` in a subprocess on loopback,
headless Chromium through Selenium. Sign in, filter, open a conversation, send
as a person and see it delivered on the console channel, see a reply arrive
live, approve a draft and see it delivered, reject one and see the agent's new
draft arrive, be refused as read-only and without a session."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import Server, browser_missing, chromium, relay_serve, sign_in, wait_for
from console_support import OPERATOR_TOKEN, READONLY_TOKEN

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    missing = browser_missing()
    if missing:
        if os.environ.get("RELAY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"RELAY_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    with relay_serve(tmp_path_factory.mktemp("console")) as running:
        yield running


@pytest.fixture
def browser(server: Server) -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def by(kind: str) -> Any:
    from selenium.webdriver.common.by import By

    return getattr(By, kind)


def rows(driver: Any) -> list[str]:
    return [
        e.get_attribute("data-id")
        for e in driver.find_elements(by("CSS_SELECTOR"), "table.conversations tbody tr")
    ]


def test_without_a_session_the_console_asks_to_sign_in(server: Server, browser: Any) -> None:
    browser.get(server.base + "/ui/")
    assert "/ui/login" in browser.current_url
    browser.find_element(by("ID"), "token").send_keys("not the token")
    browser.find_element(by("ID"), "sign-in").click()
    # the refused sign-in is a new page: wait for it, not for the old one's elements
    error = wait_for(browser, lambda d: d.find_elements(by("ID"), "error"))
    assert "Wrong token or password." in error[0].text
    # A POST from a page without a session is refused, and changes nothing.
    target = server.ids["+15551230003"]
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        fetch(arguments[0], {method: "POST", body: new URLSearchParams({csrf: "x"})})
          .then(r => done(r.status));""",
        f"{server.base}/ui/c/{target}/cancel",
    )
    assert status == 401
    with server.relay() as relay:
        assert relay.get(target).state == "WAITING_FOR_REPLY"


def test_sign_in_and_filter_the_list(server: Server, browser: Any) -> None:
    from selenium.webdriver.support.ui import Select

    sign_in(browser, server.base, OPERATOR_TOKEN)
    assert browser.find_element(by("ID"), "role").text == "operator"
    assert len(rows(browser)) == 9
    Select(browser.find_element(by("ID"), "f-state")).select_by_visible_text(
        "NEEDS_HUMAN_INTERVENTION"
    )
    browser.find_element(by("ID"), "apply").click()
    wait_for(browser, lambda d: "state=NEEDS_HUMAN_INTERVENTION" in d.current_url)
    assert sorted(rows(browser)) == sorted(
        [server.ids["+15551230002"], server.ids["hana@example.org"]]
    )
    Select(browser.find_element(by("ID"), "f-state")).select_by_visible_text("any")
    browser.find_element(by("ID"), "f-contact").send_keys("Farah")
    browser.find_element(by("ID"), "apply").click()
    wait_for(browser, lambda d: "contact=Farah" in d.current_url)
    assert rows(browser) == [server.ids["+15551230006"]]
    # The name with markup in it is shown as text, not run.
    browser.get(server.base + "/ui/?campaign=spring-renewals")
    assert (
        "<script>alert('x')</script> Mallory" in browser.find_element(by("TAG_NAME"), "main").text
    )


def test_send_as_a_person_is_delivered_and_a_reply_arrives_live(
    server: Server, browser: Any
) -> None:
    target = server.ids["+15551230006"]
    sign_in(browser, server.base, OPERATOR_TOKEN)
    browser.get(server.base + "/ui/?contact=Farah")
    browser.find_element(by("LINK_TEXT"), "Farah Haddad").click()
    wait_for(browser, lambda d: d.current_url.endswith(f"/ui/c/{target}"))
    browser.find_element(by("ID"), "send-text").send_keys("Hi Farah, it's Sam from the team.")
    browser.find_element(by("ID"), "send").click()
    wait_for(browser, lambda d: d.find_elements(by("ID"), "flash"))
    assert browser.find_element(by("ID"), "flash").text == "Message queued."

    def operator_status(driver: Any) -> str:
        found = driver.find_elements(by("CSS_SELECTOR"), "li.author-operator .status")
        return found[-1].text if found else ""

    assert operator_status(browser) == "queued"
    # The daemon's work (`relay tick`): the console channel delivers it.
    with server.relay() as relay:
        relay.run_due(poll=False)
    lines = [json.loads(line) for line in server.sent_file.read_text().splitlines()]
    assert {"to": "+15551230006", "text": "Hi Farah, it's Sam from the team."}.items() <= lines[
        -1
    ].items()
    # The page hears message.sent on the event stream and redraws: no reload.
    marker = browser.execute_script("return window.performance.timeOrigin")
    wait_for(browser, lambda d: operator_status(d) == "sent")

    with server.relay() as relay:
        relay.receive("+15551230006", "Thanks Sam, yes please renew.", channel="console")
    wait_for(
        browser,
        lambda d: "Thanks Sam, yes please renew." in d.find_element(by("ID"), "transcript").text,
    )
    assert browser.execute_script("return window.performance.timeOrigin") == marker


def test_a_read_only_user_sees_no_actions_and_is_refused(server: Server, browser: Any) -> None:
    target = server.ids["+15551230003"]
    sign_in(browser, server.base, READONLY_TOKEN)
    browser.get(f"{server.base}/ui/c/{target}")
    assert browser.find_element(by("ID"), "role").text == "readonly"
    assert not browser.find_elements(by("ID"), "actions")
    browser.get(f"{server.base}/ui/needs")
    assert not browser.find_elements(by("CSS_SELECTOR"), "form.answer-form")
    # A forged POST with this session's own CSRF token: refused for the role.
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const csrf = document.querySelector("input[name=csrf]").value;
        fetch(arguments[0], {method: "POST", body: new URLSearchParams({csrf: csrf})})
          .then(r => done(r.status));""",
        f"{server.base}/ui/c/{target}/cancel",
    )
    assert status == 403
    with server.relay() as relay:
        assert relay.get(target).state == "WAITING_FOR_REPLY"


def with_a_draft(server: Server, contact: str, approval: str = "first") -> tuple[str, int]:
    """A conversation whose agent's first message waits for approval (started after
    the tests that count the seeded rows), and the draft's id."""
    with server.relay() as relay:
        started = relay.start(
            contact, "the renewal of Olu's plan", ["Renew for a year?::yesno"], approval=approval
        )
        relay.run_due(poll=False)
        (draft,) = relay.drafts(started.id)
        return started.id, draft.id


def agent_status(driver: Any, message_id: int) -> str:
    found = driver.find_elements(by("CSS_SELECTOR"), f'li[data-message="{message_id}"] .status')
    return found[0].text if found else ""


def test_approve_a_draft_and_see_it_delivered(server: Server, browser: Any) -> None:
    target, draft = with_a_draft(server, "+15551239901")
    sign_in(browser, server.base, OPERATOR_TOKEN)
    browser.get(server.base + "/ui/needs")
    browser.find_element(by("CSS_SELECTOR"), f'article[data-draft="{draft}"] h2 a').click()
    wait_for(browser, lambda d: f"/ui/c/{target}" in d.current_url)
    assert agent_status(browser, draft) == "draft: awaits approval"
    text = browser.find_element(by("ID"), f"draft-text-{draft}").get_property("value")
    browser.find_element(by("ID"), f"approve-{draft}").click()
    wait_for(browser, lambda d: d.find_elements(by("ID"), "flash"))
    assert browser.find_element(by("ID"), "flash").text == "Draft approved and queued."
    assert agent_status(browser, draft) == "queued"
    assert not browser.find_elements(by("ID"), f"approve-{draft}")
    with server.relay() as relay:
        relay.run_due(poll=False)
    lines = [json.loads(line) for line in server.sent_file.read_text().splitlines()]
    assert {"to": "+15551239901", "text": text}.items() <= lines[-1].items()
    wait_for(browser, lambda d: agent_status(d, draft) == "sent")  # live, no reload


def test_reject_a_draft_and_the_agents_new_one_arrives(server: Server, browser: Any) -> None:
    target, draft = with_a_draft(server, "+15551239902", approval="all")
    sign_in(browser, server.base, OPERATOR_TOKEN)
    browser.get(f"{server.base}/ui/c/{target}")
    browser.find_element(by("ID"), f"reject-reason-{draft}").send_keys("Too pushy; ask gently.")
    browser.find_element(by("ID"), f"reject-{draft}").click()
    wait_for(browser, lambda d: d.find_elements(by("ID"), "flash"))
    assert "Draft rejected" in browser.find_element(by("ID"), "flash").text
    assert agent_status(browser, draft) == "rejected"
    with server.relay() as relay:
        relay.run_due(poll=False)  # the agent's turn: it reads the reason, writes anew
        (new,) = relay.drafts(target)
    wait_for(browser, lambda d: d.find_elements(by("ID"), f"approve-{new.id}"))
    assert agent_status(browser, new.id) == "draft: awaits approval"


def test_a_read_only_user_sees_a_draft_but_cannot_decide_it(server: Server, browser: Any) -> None:
    target, draft = with_a_draft(server, "+15551239903")
    sign_in(browser, server.base, READONLY_TOKEN)
    browser.get(f"{server.base}/ui/c/{target}")
    assert agent_status(browser, draft) == "draft: awaits approval"
    assert not browser.find_elements(by("ID"), "actions")
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const csrf = document.querySelector("input[name=csrf]").value;
        fetch(arguments[0], {method: "POST", body: new URLSearchParams({csrf: csrf,
          message: arguments[1]})}).then(r => done(r.status));""",
        f"{server.base}/ui/c/{target}/approve",
        str(draft),
    )
    assert status == 403
    with server.relay() as relay:
        assert [d.id for d in relay.drafts(target)] == [draft]


def test_the_phone_layout_fits_390_pixels(server: Server) -> None:
    with chromium(390, 844) as phone:
        sign_in(phone, server.base, OPERATOR_TOKEN)
        header = phone.find_element(by("CSS_SELECTOR"), "table.conversations thead")
        assert not header.is_displayed()  # the list is a column of cards
        for path in ("/ui/", f"/ui/c/{server.ids['+15551230002']}", "/ui/needs",
                     "/ui/campaigns"):  # fmt: skip
            phone.get(server.base + path)
            width = phone.execute_script("return document.documentElement.scrollWidth")
            assert width <= 390, path
