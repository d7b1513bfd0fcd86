"""How many signed Twilio webhooks a real ``relay serve`` stores per second.

Starts ``relay serve`` as a subprocess on a throwaway SQLite store (or the
database named by ``RELAY_DATABASE_URL``), POSTs N signed inbound messages
from C concurrent clients, and prints the throughput and the latency
percentiles. The signatures are computed once up front, as Twilio would.

    python bench/serve_inbound.py [N] [C]
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

TOKEN = "bench-token"


def _sign(url: str, params: dict[str, str]) -> str:
    text = url + "".join(k + params[k] for k in sorted(params))
    return base64.b64encode(hmac.new(TOKEN.encode(), text.encode(), hashlib.sha1).digest()).decode()


def main(total: int = 500, clients: int = 4) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    work = Path(tempfile.mkdtemp(prefix="relay-bench-"))
    (work / "relay.toml").write_text(
        f'[channels.sms]\ntype = "sms"\naccount_sid = "AC1"\nauth_token_env = "TWILIO_TOKEN"\n'
        f'from = "+15550001111"\npublic_url = "{base}"\n'
    )
    env = {**os.environ, "TWILIO_TOKEN": TOKEN, "NO_COLOR": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "relay", "serve", "--port", str(port)], cwd=work, env=env
    )
    try:
        _wait(base)
        url = base + "/twilio/sms/inbound"
        requests = []
        for n in range(total):
            params = {"From": f"+1555{n % 50:07d}", "Body": f"reply {n}", "MessageSid": f"SM{n}"}
            requests.append((params, _sign(url, params)))
        with httpx.Client() as client, ThreadPoolExecutor(clients) as pool:

            def post(item: tuple[dict[str, str], str]) -> float:
                started = time.perf_counter()
                answer = client.post(url, data=item[0], headers={"X-Twilio-Signature": item[1]})
                assert answer.status_code == 200, answer.text
                return time.perf_counter() - started

            began = time.perf_counter()
            latencies = sorted(pool.map(post, requests))
            elapsed = time.perf_counter() - began
        ms = [x * 1000 for x in latencies]
        print(f"{total} signed webhooks, {clients} clients: {total / elapsed:.0f}/s; latency "
              f"p50 {statistics.median(ms):.1f} ms, p95 {ms[int(len(ms) * 0.95)]:.1f} ms, "
              f"max {ms[-1]:.1f} ms")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=20)


def _wait(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("relay serve did not come up")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
