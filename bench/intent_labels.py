"""What ``[intent]`` costs relay: one batch of ``--replies`` replies ingested with the
classifier off and on, against a chat-completions server on loopback that answers
at once (so the time is relay's and the HTTP round trips', not a model's).

    python bench/intent_labels.py --replies 200 --runs 3 [--json]

Runs alternate off/on on fresh SQLite stores; the median of each is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from relay.api import Relay
from relay.channels.base import Inbound, Incoming
from relay.config import load_config
from relay.store.database import Store, make_engine
from relay.store.migrate import upgrade_url

ANSWER = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"label": "other"}'}}]}
).encode()


class Instant(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, format: str, *args: Any) -> None:
        return


def once(url: str, replies: int, enabled: bool) -> float:
    folder = tempfile.mkdtemp(prefix="relay-intent-bench-")
    database = f"sqlite:///{folder}/relay.db"
    upgrade_url(database)
    settings = {
        "database.url": database,
        "intent.enabled": enabled,
        "agent.openai.base_url": url,
        "agent.openai.model": "bench",
        "channels.console.echo": False,
    }
    relay = Relay(Store(make_engine(database)), load_config(overrides=settings))
    phones = [f"+1555100{n:04d}" for n in range(replies)]
    for phone in phones:
        relay.start(phone, "the bench", ["Which day?"])
    batch = [Inbound(p, f"reply {n}", provider_message_id=f"b{n}") for n, p in enumerate(phones)]
    started = time.perf_counter()
    relay.ingest("console", Incoming(messages=batch))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Instant)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(args.runs):
        for name in times:
            times[name].append(once(url, args.replies, name == "on"))
    server.shutdown()
    off, on = (statistics.median(times[name]) for name in ("off", "on"))
    result = {
        "replies": args.replies,
        "off_seconds": round(off, 3),
        "on_seconds": round(on, 3),
        "ms_per_label": round(1000 * (on - off) / args.replies, 2),
        "runs": {name: [round(t, 3) for t in values] for name, values in times.items()},
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.replies} replies: off {off:.3f} s, on {on:.3f} s "
            f"({result['ms_per_label']} ms a label, median of {args.runs})"
        )


if __name__ == "__main__":
    main()
