"""A real ``relay serve`` (a subprocess on a free loopback port, over a seeded
SQLite project) and headless Chromium driven by Selenium, for the console's
browser tests and the screenshots in docs/console.md.

Debian's ``chromium`` and ``chromium-driver`` are used as installed (``.ci/run``
installs them where missing); Selenium is given the driver's path, so it never
downloads one. Without them the tests skip, unless ``RELAY_REQUIRE_BROWSER=1``
(set in CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from console_support import CONSOLE_KEYS, ENV, free_port, seed

CHROMIUM = os.environ.get("RELAY_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RELAY_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    return None


def relay_command() -> str:
    beside = Path(sys.executable).parent / "relay"
    return str(beside) if beside.exists() else (shutil.which("relay") or "relay")


def write_project(folder: Path) -> Path:
    """relay.toml with the console on and the console channel writing a file."""
    console = "\n".join(
        f"{key.split('.', 1)[1]} = {'true' if value is True else repr(value)}"
        for key, value in CONSOLE_KEYS.items()
    ).replace("'", '"')
    config = folder / "relay.toml"
    config.write_text(
        '[defaults]\nheartbeat = "2h"\n\n'
        f"[console]\n{console}\n\n"
        '[channels.console]\nfile = ".relay/console.jsonl"\necho = false\n',
        encoding="utf-8",
    )
    return config


@dataclass
class Server:
    folder: Path
    config: Path
    base: str
    ids: dict[str, str]
    process: subprocess.Popen[bytes]

    def relay(self) -> Any:
        from relay.api import Relay

        return Relay.open(self.config)

    @property
    def sent_file(self) -> Path:
        return self.folder / ".relay" / "console.jsonl"


@contextmanager
def relay_serve(folder: Path, seeder: Any = seed) -> Iterator[Server]:
    """``relay serve`` on a free loopback port over a project seeded by ``seeder``."""
    from relay.api import Relay

    config = write_project(folder)
    with Relay.open(config) as relay:
        ids = seeder(relay, folder)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env.update(ENV)
    process = subprocess.Popen(
        [relay_command(), "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "serve.log").open("wb"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, process, folder)
        yield Server(folder, config, base, ids, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_up(base: str, process: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (folder / "serve.log").read_text(errors="replace")
            raise AssertionError(f"relay serve exited {process.returncode}: {log}")
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("relay serve did not answer /healthz in 30 s")


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """Headless Chromium through Debian's chromedriver, in a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="relay-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={max(width, 500)},{height}")
        if width < 500:
            # A headless window is at least 500 px wide: a phone's width is emulated.
            metrics = {"width": width, "height": height, "pixelRatio": 1.0}
            options.add_experimental_option("mobileEmulation", {"deviceMetrics": metrics})
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(30)
        try:
            yield driver
        finally:
            driver.quit()


def sign_in(driver: Any, base: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/ui/login")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "sign-in").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "role"))


def wait_for(driver: Any, condition: Any, seconds: float = 15) -> Any:
    """Poll the page until ``condition(driver)`` is truthy (Selenium's own wait); an
    element replaced by a live redraw meanwhile is looked up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(driver, seconds, poll_frequency=0.1, ignored_exceptions=ignored)
    return wait.until(condition)
