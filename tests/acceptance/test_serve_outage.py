"""``relay serve`` through a PostgreSQL outage (issue 32): while the store is away
every request is answered 503 with ``Retry-After`` and the log gets one line for
the kind of failure (not a traceback per request); once the server is back the
next request is stored, with no restart, and what the provider sends again is
stored once. On a throwaway cluster of the test's own (never the shared server)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_pg_outage import Cluster, _migrated, cluster  # noqa: F401 - the fixture

from relay.channels import webhook
from relay.runner.pulse import take_all
from relay.store.models import Message

pytestmark = pytest.mark.slow

SECRET = "hook-secret"
PHONE = "+15551230001"


@pytest.fixture
def served(make_relay: Any, cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:  # noqa: F811
    from starlette.testclient import TestClient

    from relay.runner.serve import build_app

    monkeypatch.setenv("HOOK_SECRET", SECRET)
    settings = {
        "channels.hook.type": "webhook",
        "channels.hook.url": "http://127.0.0.1:9/unused",
        "channels.hook.secret_env": "HOOK_SECRET",
    }
    relay = make_relay(_migrated(cluster), None, **settings)
    with TestClient(build_app(relay)) as client:
        yield relay, client


def post(client: Any, ident: str) -> Any:
    body = json.dumps({"from": PHONE, "text": f"reply {ident}", "id": ident}).encode()
    stamp = int(time.time())
    headers = {
        webhook.TIMESTAMP_HEADER: str(stamp),
        webhook.SIGNATURE_HEADER: webhook.sign_inbound(SECRET, stamp, body),
        "Content-Type": "application/json",
    }
    return client.post("/webhook/hook/inbound", content=body, headers=headers)


def test_serve_answers_503_through_an_outage_logs_once_and_recovers(
    served: Any,
    cluster: Cluster,  # noqa: F811 - the fixture
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay, client = served
    assert post(client, "w-0").status_code == 200
    cluster.stop()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        answers = [post(client, f"w-{n}") for n in range(1, 6)]
        assert [a.status_code for a in answers] == [503] * 5
        assert {a.headers["Retry-After"] for a in answers} == {"5"}
        serve_lines = [r for r in caplog.records if r.name == "relay.serve"]
        assert len(serve_lines) == 1 and serve_lines[0].levelno == logging.ERROR
        assert not any(r.exc_info for r in caplog.records)
        cluster.start()
        # The provider retries what got 503; each is stored once.
        again = [post(client, f"w-{n}") for n in range(1, 6)] + [post(client, "w-1")]
        assert [a.status_code for a in again] == [200] * 6
        assert any("store back" in r.getMessage() for r in caplog.records)
    # What serve stored, the daemon takes in: each message once.
    take_all(relay, 100)
    with relay.store.transaction() as session:
        stored = session.query(Message.provider_message_id).filter_by(direction="inbound").all()
    assert sorted(i for (i,) in stored) == [f"w-{n}" for n in range(6)]
