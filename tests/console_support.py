"""What the console's tests share: a store seeded through the API the way a team
fills it (two imported campaigns, replies, a contact who asks for a person, one
who opts out, a name with markup in it), and the console's credentials."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

OPERATOR_TOKEN = "operator-token-0123456789"
READONLY_TOKEN = "readonly-token-0123456789"
METRICS_TOKEN = "metrics-token-0123456789"
SESSION_SECRET = "session-secret-0123456789"
ENV = {
    "CONSOLE_OPERATOR_TOKEN": OPERATOR_TOKEN,
    "CONSOLE_READONLY_TOKEN": READONLY_TOKEN,
    "CONSOLE_SESSION_SECRET": SESSION_SECRET,
}
#: relay.toml's [console] (and the flat keys for make_relay) the tests use.
CONSOLE_KEYS = {
    "console.enabled": True,
    "console.operator_token_env": "CONSOLE_OPERATOR_TOKEN",
    "console.readonly_token_env": "CONSOLE_READONLY_TOKEN",
    "console.session_secret_env": "CONSOLE_SESSION_SECRET",
}
MARKUP_NAME = "<script>alert('x')</script> Mallory"

RENEWALS = [
    ("+15551230001", "Ana Lima"),
    ("+15551230002", "Ben Okafor"),
    ("+15551230003", "Chloé Martin"),
    ("+15551230004", "Dev Patel"),
    ("+15551230005", MARKUP_NAME),
    ("+15551230006", "Farah Haddad"),
]
DELIVERIES = [
    ("gus@example.org", "Gus Lindqvist"),
    ("hana@example.org", "Hana Sato"),
    ("ivan@example.org", "Ivan Petrov"),
]
#: Who says what once the first messages went out.
REPLIES = {
    "+15551230001": "Yes, renew it please.",
    "+15551230002": "Can I talk to a human about the price?",
    "+15551230004": "STOP",
    "gus@example.org": "Thursday works for me.",
    "hana@example.org": "I'd rather speak to a person, thanks.",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["contact", "name"])
        writer.writerows(rows)
    return path


def seed(relay: Any, folder: Path) -> dict[str, str]:
    """Fill the store: two campaigns, first messages sent, replies processed.
    Returns each contact's conversation id by address."""
    relay.import_csv(
        write_csv(folder / "renewals.csv", RENEWALS),
        "the renewal of {name}'s plan",
        ["Do you want to renew for another year?::yesno"],
        campaign="spring-renewals",
    )
    relay.import_csv(
        write_csv(folder / "deliveries.csv", DELIVERIES),
        "a delivery slot for {name}",
        ["Which day suits you for the delivery?::date"],
        campaign="depot-deliveries",
    )
    relay.run_due(poll=False)
    for contact, text in REPLIES.items():
        relay.receive(contact, text, channel="console")
    relay.run_due(poll=False)
    ids = {}
    for view in relay.instances(limit=100):
        ids[view.contact] = view.id
    return ids


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


@dataclass
class Served:
    relay: Any
    base: str
    ids: dict[str, str]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10, follow_redirects=False)

    @contextmanager
    def signed_in(self, token: str) -> Iterator[httpx.Client]:
        """A client holding a session for ``token``."""
        with self.client() as client:
            page = client.get("/ui/login")
            answer = client.post(
                "/ui/login", data={"csrf": csrf_of(page.text), "token": token, "next": "/ui/"}
            )
            assert answer.status_code == 303, answer.text
            yield client
