"""How many files of relay's engine, runner, agents and channels one heartbeat and one
reply run functions in (issue 27: a reader follows one behaviour through few files).

Two scenarios, each on a throwaway SQLite store with the scripted agent:

* ``tick``: a conversation waits for a reply with its follow-up due (it was started
  on a clock set back an hour, heartbeat 30m); ``relay tick`` in a subprocess (the
  real entry point, ``python -m relay tick``) fires that one follow-up: the agent's
  turn and the message delivered on the console channel.
* ``serve``: a conversation on a ``webhook`` channel (its deliveries go to a small
  HTTP server in this process) gets a signed reply through ``relay serve``'s route
  ``POST /webhook/<channel>/inbound`` (the app ``relay serve`` runs, driven by
  Starlette's TestClient in a subprocess), then ``relay tick`` in another subprocess
  runs the agent's answer and delivers it. The count is over both processes.

Each subprocess is profiled with ``sys.setprofile`` (and ``threading.setprofile``)
from its start to its end. A file counts when one of its functions is *called*
outside an import: module bodies (``<module>``) and anything called while a module is
being imported (a frame of ``importlib._bootstrap`` on the stack) are left out, so the
figure is the code that does the work, not the code that is loaded. Each scenario
checks that the work happened (one follow-up fired and delivered; one reply stored,
answered and delivered) and exits 1 if not.

    python bench/tick_files.py [--json] [--functions]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FOLDERS = ("engine", "runner", "agents", "channels")
ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "relay"
SECRET = "bench-secret"
CONTACT = "+15550001234"


# -- the profiled child ---------------------------------------------------------------------


def _importing(frame: Any) -> bool:
    """Whether ``frame`` runs inside an import (a module being loaded)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _profile() -> dict[str, set[str]]:
    """Install the hook; returns the map it fills: file -> functions called outside imports."""
    prefixes = tuple(str(PACKAGE / folder) + os.sep for folder in FOLDERS)
    ran: dict[str, set[str]] = {}
    other: set[str] = set()

    def hook(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        name = code.co_filename
        if event != "call" or name in other:
            return
        if not name.startswith(prefixes):
            other.add(name)
        elif (
            code.co_name != "<module>"
            and code.co_qualname not in ran.get(name, ())
            and not _importing(frame.f_back)  # the walk up the stack only for new names
        ):
            ran.setdefault(name, set()).add(code.co_qualname)

    threading.setprofile(hook)
    sys.setprofile(hook)
    return ran


def _child(out: Path, argv: list[str]) -> int:
    ran = _profile()
    code = 0
    try:
        if argv[0] == "serve-post":
            code = _post_reply(argv[1])
        else:
            sys.argv = ["relay", *argv]
            import runpy

            try:
                runpy.run_module("relay", run_name="__main__", alter_sys=True)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        files = {str(Path(k).relative_to(ROOT)): sorted(v) for k, v in ran.items()}
        out.write_text(json.dumps(files))
    return code


def _post_reply(channel: str) -> int:
    """What ``relay serve`` does with one signed webhook reply: the app it runs, built
    from relay.toml as the command builds it, one POST."""
    from starlette.testclient import TestClient

    from relay.channels.webhook import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_inbound
    from relay.cli.session import state
    from relay.runner.serve import build_app

    body = json.dumps({"from": CONTACT, "text": "Tuesday works", "id": "reply-1"}).encode()
    stamp = int(time.time())
    headers = {
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: sign_inbound(SECRET, stamp, body),
        "Content-Type": "application/json",
    }
    with TestClient(build_app(state.relay())) as client:
        answer = client.post(f"/webhook/{channel}/inbound", content=body, headers=headers)
    state.close()
    print(json.dumps({"status": answer.status_code, "body": answer.text}))
    return 0 if answer.status_code == 200 else 1


# -- the parent: set-up, run, report --------------------------------------------------------


class _Sink(BaseHTTPRequestHandler):
    """The far end of the webhook channel: takes each delivery, answers with an id."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.count += 1  # type: ignore[attr-defined]
        data = json.dumps({"id": f"sink-{self.server.count}"}).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _sink() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.count = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _run(folder: Path, argv: list[str], label: str) -> tuple[dict[str, list[str]], str]:
    out = folder / f"{label}.json"
    env = {**os.environ, "NO_COLOR": "1", "HOOK_SECRET": SECRET}
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(out), *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"relay: error: {label} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(out.read_text()), done.stdout


def _waiting(bench: Any, clock: Any, extra: dict[str, Any], **options: Any) -> str:
    """One conversation through the real API, its first message delivered."""
    from relay.runner.pulse import Pulse

    relay = bench.relay(clock, **extra)
    try:
        view = relay.start(
            CONTACT, "Confirm the delivery date", ["Which day suits you?"], defer=True, **options
        )
        pulse = Pulse(relay, owner="bench-seed")
        while not pulse.run().idle:
            pass
        assert relay.get(view.id).state == "WAITING_FOR_REPLY", relay.get(view.id).state
        return view.id
    finally:
        relay.close()


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"relay: error: the scenario did not happen as set up: {what}")


def tick_scenario() -> dict[str, list[str]]:
    from benchlib import fake_clock_at_now, throwaway_store

    with throwaway_store(None) as bench:
        bench.write_config()
        # Started an hour ago with a 30-minute heartbeat: the follow-up is due now.
        _waiting(bench, fake_clock_at_now(), {}, heartbeat="30m")
        files, stdout = _run(bench.folder, ["tick", "--json"], "tick")
        report = json.loads(stdout)
        fired, sent = report["heartbeats_fired"], report["delivered"]
        _check(fired == 1, f"one heartbeat fired, got {fired}")
        _check(sent == 1, f"one message delivered, got {sent}")
        return files


def serve_scenario() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from benchlib import throwaway_store

    with throwaway_store(None) as bench, _sink() as sink:
        extra = {
            "channels.hook.type": "webhook",
            "channels.hook.url": f"http://127.0.0.1:{sink.server_address[1]}/",
            "channels.hook.secret_env": "HOOK_SECRET",
        }
        bench.write_config(**extra)
        os.environ["HOOK_SECRET"] = SECRET
        _waiting(bench, None, extra, channel="hook", heartbeat="1d")
        _check(sink.count == 1, f"the first message delivered, got {sink.count}")  # type: ignore[attr-defined]
        posted, stdout = _run(bench.folder, ["serve-post", "hook"], "serve")
        _check(json.loads(stdout)["status"] == 200, f"the reply accepted: {stdout}")
        answered, stdout = _run(bench.folder, ["tick", "--no-poll", "--json"], "answer")
        report = json.loads(stdout)
        _check(len(report["turns"]) == 1, f"one turn, got {report['turns']}")
        _check(sink.count == 2, f"the answer delivered, got {sink.count}")  # type: ignore[attr-defined]
        return posted, answered


def _grouped(files: dict[str, list[str]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {folder: [] for folder in FOLDERS}
    for path in sorted(files):
        groups[Path(path).parts[1]].append(path)
    return groups


def _merged(*parts: dict[str, list[str]]) -> dict[str, list[str]]:
    merged: dict[str, set[str]] = {}
    for part in parts:
        for path, names in part.items():
            merged.setdefault(path, set()).update(names)
    return {path: sorted(names) for path, names in merged.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--functions", action="store_true", help="list the functions that ran in each file"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    tick = tick_scenario()
    posted, answered = serve_scenario()
    serve = _merged(posted, answered)
    scenarios = {
        "tick": {"count": len(tick), "files": _grouped(tick)},
        "serve": {
            "count": len(serve),
            "files": _grouped(serve),
            "serve_process": len(posted),
            "tick_process": len(answered),
        },
    }
    if args.json:
        print(json.dumps(scenarios, indent=2))
        return 0
    for name, functions in (("tick", tick), ("serve", serve)):
        data = scenarios[name]
        title = {
            "tick": "relay tick firing one follow-up (agent turn + delivery)",
            "serve": "relay serve taking a reply, relay tick answering it (turn + delivery)",
        }[name]
        print(f"{title}: {data['count']} files")
        for folder, paths in data["files"].items():
            print(f"  {folder} ({len(paths)})")
            for path in paths:
                suffix = f": {', '.join(functions[path])}" if args.functions else ""
                print(f"    {path}{suffix}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(_child(Path(sys.argv[2]), sys.argv[3:]))
    sys.exit(main())
