"""Take the screenshots of docs/console.md: ``python tests/console_screenshots.py docs/images``.

The browser tests' project (two imported campaigns, replies, people asking for
a person, an opt-out), then two more weeks of a third imported campaign played
on a moved clock: replies on different days, follow-ups, conversations given
up; then a new conversation with one of its contacts, started with approval,
whose opening message awaits a person. ``relay serve`` on loopback, headless
Chromium at 1280 and 390 pixels wide.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from browser_support import chromium, relay_serve, sign_in
from console_support import OPERATOR_TOKEN, seed, write_csv

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


FIRST = ["Amara", "Bruno", "Camille", "Diego", "Elif", "Femi", "Greta", "Hiro", "Ines",
         "Jonas", "Kavya", "Luca", "Maya", "Noor", "Oskar", "Priya", "Quinn", "Rosa",
         "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yusuf"]  # fmt: skip
LAST = ["Okoye", "Costa", "Dubois", "Ramos", "Yilmaz", "Adeyemi", "Berg", "Tanaka"]
ANSWERS = ["Yes, please renew.", "No thanks, not this year.", "yes", "Yes go ahead",
           "Could a person call me about it?", "no"]  # fmt: skip


def seed_weeks(relay: Any, folder: Path) -> dict[str, str]:
    """:func:`seed`, then a campaign of 24 played over 14 days on a moved clock."""
    from relay.api import Relay
    from relay.testing import FakeClock

    ids = seed(relay, folder)
    # The two weeks end six hours ago, before what the real clock does next.
    answered = sum(17 + 9 * n for n in range(24) if n % 4 != 3)
    clock = FakeClock(datetime.now(UTC) - timedelta(days=13, hours=6, minutes=answered))
    played = Relay(relay.store, relay.config, clock)
    rows = [(f"+1555987{n:04d}", f"{FIRST[n]} {LAST[n % len(LAST)]}") for n in range(24)]
    played.import_csv(write_csv(folder / "winback.csv", rows), "a winback offer for {name}",
                      ["Would you like to come back at 20% off?::yesno"],
                      campaign="autumn-winback", heartbeat="2d", max_followups=3)  # fmt: skip
    played.run_due(poll=False)
    for day in range(13):
        for n, (address, _) in enumerate(rows):
            if n % 13 == day and n % 4 != 3:  # a quarter never answers
                clock.advance(timedelta(minutes=17 + 9 * n))
                played.receive(address, ANSWERS[n % len(ANSWERS)], channel="console")
        for _ in range(12):
            clock.advance(timedelta(hours=2))
            played.run_due(poll=False)
    # Diego never answered the winback (given up): a person approves what goes to him now.
    diego = rows[3][0]
    started = relay.start(diego, "a loyalty offer for Diego Ramos, who left in spring",
                          ["Would a free month bring you back?::yesno"],
                          campaign="vip-winback", approval="first")  # fmt: skip
    relay.run_due(poll=False)
    ids[diego] = started.id
    return ids


def main(target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, relay_serve(Path(folder), seed_weeks) as server:
        pages = {
            "conversations": "/ui/?sort=updated",
            "conversation": f"/ui/c/{server.ids['+15551230002']}",
            "draft": f"/ui/c/{server.ids['+15559870003']}",
            "needs": "/ui/needs",
            "campaigns": "/ui/campaigns?campaign=autumn-winback",
        }
        for label, (width, height) in WIDTHS.items():
            with chromium(width, height) as browser:
                sign_in(browser, server.base, OPERATOR_TOKEN)
                for name, path in pages.items():
                    browser.get(server.base + path)
                    out = target / f"console-{name}-{width}.png"
                    browser.save_screenshot(str(out))
                    print(f"{label}: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")))
