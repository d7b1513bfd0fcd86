"""``relay serve`` against a bare Starlette app on the same uvicorn, in one run.

Starts ``relay serve`` (a throwaway SQLite store, or a new database on the
PostgreSQL server named by ``--url``) and a bare Starlette app (one route that
reads the form and answers the same empty TwiML, nothing else) as two
subprocesses on the same uvicorn settings (``relay.runner.foreground.server_config``),
and POSTs N signed Twilio inbound webhooks to each from C keep-alive
connections, round after round, the two alternated (which one goes first
alternates too), so a busy moment on a shared machine hits both alike.

Prints, per round and as medians: requests/s of each and their ratio, each
server's CPU per request (user + system of its process, from /proc) and their
ratio (the bare app's over relay's: the rate ratio when each server has a core
of its own, steadier than the wall-clock one on a shared machine), latency
p50/p99; then the webhooks relay stored (rows in ``pushes``) against the
requests it acknowledged (200), and with ``--take`` the inbound messages the
daemon's intake (``relay.runner.pulse``, in this process) made of them
and its CPU per push.

    python bench/serve_inbound.py [--requests N] [--clients C] [--rounds R]
                                  [--url postgresql://...] [--take] [--json]

The client is a small asyncio HTTP/1.1 client with the requests built and
signed up front, so that it costs the two servers' core as little as possible:
on two cores the client, the server and (for PostgreSQL) the database share
them, which the ratio, not the absolute rate, is meant to see through.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import os
import socket
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlencode

from benchlib import (
    Bench,
    ReadOnly,
    cpu_seconds,
    emit,
    machine,
    machine_cpu,
    median,
    percentile,
    stop,
    throwaway_store,
)

TOKEN = "bench-token"
#: The URL Twilio is told to call (a proxy in front of relay serve), as in production.
PUBLIC = "https://hooks.example.org"
PATH = "/twilio/sms/inbound"
BARE = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from relay.runner.foreground import server_config

TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'

async def inbound(request):
    await request.form()
    return Response(TWIML, media_type="application/xml")

app = Starlette(routes=[Route("/twilio/{channel}/inbound", inbound, methods=["POST"])])
uvicorn.Server(server_config(app, "127.0.0.1", int(sys.argv[1]))).run()
"""


def _sign(url: str, params: dict[str, str]) -> str:
    text = url + "".join(k + params[k] for k in sorted(params))
    return base64.b64encode(hmac.new(TOKEN.encode(), text.encode(), hashlib.sha1).digest()).decode()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _requests(base: str, first: int, count: int) -> list[bytes]:
    """Signed Twilio inbound webhooks, built once, each with a MessageSid of its own."""
    out = []
    for n in range(first, first + count):
        params = {
            "AccountSid": "AC1",
            "From": f"+1555{n % 500:07d}",
            "To": "+15550001111",
            "Body": f"reply {n}",
            "MessageSid": f"SM{n:012d}",
        }
        body = urlencode(params).encode()
        head = (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"X-Twilio-Signature: {_sign(base + PATH, params)}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        out.append(head.encode() + body)
    return out


async def _client(
    port: int, queue: list[bytes], latencies: list[float], codes: dict[int, int]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while queue:
            request = queue.pop()
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            codes[status] = codes.get(status, 0) + 1
    finally:
        writer.close()


def _round(pid: int, port: int, requests: list[bytes], clients: int) -> dict[str, Any]:
    queue = list(reversed(requests))
    latencies: list[float] = []
    codes: dict[int, int] = {}

    async def run() -> None:
        await asyncio.gather(*(_client(port, queue, latencies, codes) for _ in range(clients)))

    cpu, machine_before = cpu_seconds(pid), machine_cpu()
    began = time.perf_counter()
    asyncio.run(run())
    elapsed = time.perf_counter() - began
    cpu = cpu_seconds(pid) - cpu
    machine_after = machine_cpu()
    ms = sorted(x * 1000 for x in latencies)
    return {
        "rate": len(requests) / elapsed,
        "cpu_ms": cpu * 1000 / len(requests),
        # The database server's processes (PostgreSQL), and every core of the machine.
        "db_cpu_ms": (machine_after["server"] - machine_before["server"]) * 1000 / len(requests),
        "machine_busy": (machine_after["machine"] - machine_before["machine"]) / elapsed,
        "p50_ms": percentile(ms, 0.5),
        "p99_ms": percentile(ms, 0.99),
        "ok": codes.get(200, 0),
        "codes": codes,
    }


def _wait(port: int, process: subprocess.Popen[bytes], path: str) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server on {port} exited with {process.returncode}")
        try:
            httpx.get(f"http://127.0.0.1:{port}{path}", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"server on {port} did not come up")


def measure(bench: Bench, total: int, clients: int, rounds: int, take: bool) -> dict[str, Any]:
    relay_port, bare_port = _free_port(), _free_port()
    base = PUBLIC
    config = bench.write_config(
        **{
            "channels.sms.type": "sms",
            "channels.sms.account_sid": "AC1",
            "channels.sms.auth_token_env": "TWILIO_TOKEN",
            "channels.sms.from": "+15550001111",
            "channels.sms.public_url": base,
        }
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env |= {"TWILIO_TOKEN": TOKEN, "NO_COLOR": "1"}
    command = [sys.executable, "-m", "relay", "--config", str(config), "serve"]
    # BENCH_PROFILE=DIR runs relay serve under cProfile, its stats in DIR/serve.prof.
    profile_dir = os.environ.get("BENCH_PROFILE")
    profile = ["-m", "cProfile", "-o", f"{profile_dir}/serve.prof"] if profile_dir else []
    serving = [sys.executable, *profile, *command[1:], "--port", str(relay_port)]
    relay = subprocess.Popen(serving, cwd=bench.folder, env=env)
    bare = subprocess.Popen([sys.executable, "-c", BARE, str(bare_port)], env=env)
    results: dict[str, list[dict[str, Any]]] = {"relay": [], "bare": []}
    try:
        _wait(relay_port, relay, "/healthz")
        _wait(bare_port, bare, "/")
        # Warm both (imports, the first channel, the first transaction); not counted.
        warm = _requests(base, 10**9, 50)
        _round(relay.pid, relay_port, warm, clients)
        _round(bare.pid, bare_port, warm, clients)
        for number in range(rounds):
            requests = _requests(base, number * total, total)
            order = [("bare", bare, bare_port), ("relay", relay, relay_port)]
            for name, process, port in order if number % 2 == 0 else order[::-1]:
                results[name].append(_round(process.pid, port, requests, clients))
            r, b = results["relay"][-1], results["bare"][-1]
            print(
                f"round {number + 1}: relay {r['rate']:.0f}/s ({r['cpu_ms']:.2f} ms CPU/req), "
                f"bare {b['rate']:.0f}/s ({b['cpu_ms']:.2f} ms CPU/req): "
                f"{r['rate'] / b['rate']:.2f}x; database CPU {r['db_cpu_ms']:.2f} ms/req; "
                f"cores busy {r['machine_busy']:.2f} / {b['machine_busy']:.2f}; "
                f"relay answers {r['codes']}",
                flush=True,
            )
    finally:
        stop(relay, timeout=30)
        stop(bare, timeout=30)
    acknowledged = sum(r["ok"] for r in results["relay"]) + 50
    reader = ReadOnly(bench.url)
    stored = int(reader.scalar("SELECT count(*) FROM pushes"))
    reader.close()
    pairs = (results["relay"], results["bare"])
    figures: dict[str, Any] = {
        "requests_per_round": total,
        "clients": clients,
        "rounds": rounds,
        "ratio_median": median(
            [r["rate"] / b["rate"] for r, b in zip(*results.values(), strict=True)]
        ),
        # What the rate ratio is when each server has a core to itself: the bare
        # app's CPU per request over relay's (steadier on a shared machine).
        "cpu_ratio_median": median(
            [b["cpu_ms"] / r["cpu_ms"] for r, b in zip(*pairs, strict=True)]
        ),
        "relay_rate_median": median([r["rate"] for r in results["relay"]]),
        "bare_rate_median": median([b["rate"] for b in results["bare"]]),
        "relay_cpu_ms_per_request": median([r["cpu_ms"] for r in results["relay"]]),
        "bare_cpu_ms_per_request": median([b["cpu_ms"] for b in results["bare"]]),
        "database_cpu_ms_per_request": median([r["db_cpu_ms"] for r in results["relay"]]),
        "relay_p50_ms": median([r["p50_ms"] for r in results["relay"]]),
        "relay_p99_ms": median([r["p99_ms"] for r in results["relay"]]),
        "bare_p99_ms": median([b["p99_ms"] for b in results["bare"]]),
        "acknowledged": acknowledged,
        "stored": stored,
    }
    if take:
        from relay.runner.pulse import take_all

        relay_api = bench.relay(**{"channels.sms.type": "sms", "channels.sms.from": "+15550001111"})
        began, cpu = time.perf_counter(), time.process_time()
        take_all(relay_api, 500)
        figures["take_seconds"] = time.perf_counter() - began
        figures["take_cpu_ms_per_push"] = (time.process_time() - cpu) * 1000 / stored
        relay_api.store.dispose()
        reader = ReadOnly(bench.url)
        figures["inbound_messages"] = int(
            reader.scalar("SELECT count(*) FROM messages WHERE direction = 'inbound'")
        )
        figures["pushes_left"] = int(reader.scalar("SELECT count(*) FROM pushes"))
        reader.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="per server per round")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", default=None, help="a PostgreSQL server URL (default SQLite)")
    parser.add_argument("--take", action="store_true", help="then take them in as the daemon does")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    before = machine()
    with throwaway_store(args.url) as bench:
        figures = measure(bench, args.requests, args.clients, args.rounds, args.take)
    figures["backend"] = "postgresql" if args.url else "sqlite"
    figures["machine_before"], figures["machine_after"] = before, machine()
    f = figures
    table = [
        ("backend", f["backend"]),
        ("relay serve / bare Starlette, requests/s (median)", f"{f['ratio_median']:.2f}x"),
        ("the same by CPU per request (bare's / relay's)", f"{f['cpu_ratio_median']:.2f}x"),
        ("requests/s relay / bare", f"{f['relay_rate_median']:.0f} / {f['bare_rate_median']:.0f}"),
        (
            "server CPU per request relay / bare",
            f"{f['relay_cpu_ms_per_request']:.2f} / {f['bare_cpu_ms_per_request']:.2f} ms",
        ),
        (
            "latency p50 / p99 relay (bare p99)",
            f"{f['relay_p50_ms']:.1f} / {f['relay_p99_ms']:.1f} ms ({f['bare_p99_ms']:.1f} ms)",
        ),
        ("stored / acknowledged", f"{f['stored']} / {f['acknowledged']}"),
    ]
    if args.url:  # every postgres process on the machine: others' too, on a shared server
        table.insert(5, ("PostgreSQL CPU ms/request", f"{f['database_cpu_ms_per_request']:.2f}"))
    if args.take:
        table.append(
            (
                "taken in: inbound messages / pushes left",
                f"{f['inbound_messages']} / {f['pushes_left']} in {f['take_seconds']:.1f} s, "
                f"{f['take_cpu_ms_per_push']:.2f} ms CPU each",
            )
        )
    table += [("machine before", before), ("machine after", f["machine_after"])]
    emit(figures, args.json, table)


if __name__ == "__main__":
    main()
