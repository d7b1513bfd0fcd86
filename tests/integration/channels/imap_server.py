"""A real IMAP server for tests: pymap with its maildir backend, on loopback.

pymap runs as a subprocess (``python -c 'from pymap.main import main; main()'``)
so a test can stop and restart it like a real server that went down; the
maildir on disk keeps the mail and the UIDs across restarts. Mail is put in
the way a mail server's delivery would: an IMAP ``APPEND`` over the wire,
with imaplib from the standard library.
"""

from __future__ import annotations

import imaplib
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

USER = "relay"
PASSWORD = "imap-s3cret"

_RUN = "import sys; from pymap.main import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ImapServer:
    root: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        from pysasl.hashing import BuiltinHash

        self.root.mkdir(parents=True, exist_ok=True)
        # Few hash rounds: a login must not cost the shared test machine a second of CPU.
        hashed = BuiltinHash(rounds=1000).hash(PASSWORD)
        (self.root / "pymap-etc-passwd").write_text(f"{USER}:::::{USER}:\r\n")
        (self.root / "pymap-etc-shadow").write_text(f"{USER}:{hashed}\r\n")

    def start(self, timeout: float = 20.0) -> ImapServer:
        log = open(self.root / "pymap.log", "ab")  # noqa: SIM115 - the child holds it
        command = [sys.executable, "-c", _RUN, "--host", self.host, "--port", str(self.port)]
        command += ["--no-tls", "maildir", str(self.root)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pymap did not start: {self.log()[-2000:]}")
            time.sleep(0.05)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as sock:
                return sock.recv(64).startswith(b"* OK")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def log(self) -> str:
        path = self.root / "pymap.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def append(self, raw: bytes | str, mailbox: str = "INBOX") -> None:
        """Deliver one email into ``mailbox`` over IMAP APPEND."""
        data = raw.encode() if isinstance(raw, str) else raw
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        client = imaplib.IMAP4(self.host, self.port, timeout=10)
        try:
            client.login(USER, PASSWORD)
            status, detail = client.append(mailbox, None, None, data)
            assert status == "OK", detail
        finally:
            client.logout()

    def settings(self, **extra: object) -> dict[str, object]:
        """The ``imap_*`` keys of a ``[channels.NAME]`` section for this server."""
        return {
            "imap_host": self.host,
            "imap_port": self.port,
            "imap_ssl": False,
            "imap_username": USER,
            "imap_password_env": "RELAY_TEST_IMAP_PASSWORD",
            **extra,
        }
