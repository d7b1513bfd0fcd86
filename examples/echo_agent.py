#!/usr/bin/env python3
"""A tiny relay command agent: read the turn on stdin, print actions on stdout.

Use it with::

    [agent]
    backend = "command"

    [agent.command]
    command = ["python3", "examples/echo_agent.py"]

It greets with the objective, echoes each reply back, and ends the
conversation when the contact says "bye". Only the standard library: a
command agent can be written in any language that reads and writes JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def decide(turn: dict[str, Any]) -> list[dict[str, Any]]:
    reason = turn["reason"]
    if reason == "first_message":
        return [say(f"Hello! I'm here about: {turn['objective']}. Reply and I'll echo you.")]
    if reason == "follow_up":
        return [
            say(f"Still there? (reminder {turn['follow_up_number']} of {turn['max_followups']})")
        ]
    said = [m["text"] for m in turn["new_messages"] if m["direction"] == "inbound"]
    if not said:
        return [say("I'm back. Say anything and I'll echo it.")]
    if any(text.strip().lower() == "bye" for text in said):
        return [say("Goodbye!"), {"name": "end_conversation", "args": {"reason": "completed"}}]
    return [say(f"You said: {text}") for text in said]


def say(text: str) -> dict[str, Any]:
    return {"name": "send_message", "args": {"text": text}}


def main() -> int:
    turn = json.load(sys.stdin)
    if turn.get("schema") != "relay.turn/1":
        print(f"echo_agent: unsupported schema {turn.get('schema')!r}", file=sys.stderr)
        return 2
    json.dump({"actions": decide(turn)}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
