"""Take the screenshots of docs/console.md: ``python tests/console_screenshots.py docs/images``.

The same seeded project as the browser tests (two imported campaigns, replies,
people asking for a person, an opt-out), ``relay serve`` on loopback, headless
Chromium at 1280 and 390 pixels wide.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from browser_support import chromium, relay_serve, sign_in
from console_support import OPERATOR_TOKEN

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


def main(target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, relay_serve(Path(folder)) as server:
        pages = {
            "conversations": "/ui/",
            "conversation": f"/ui/c/{server.ids['+15551230001']}",
            "needs": "/ui/needs",
            "campaigns": "/ui/campaigns?campaign=spring-renewals",
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
