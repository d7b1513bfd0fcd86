"""The panels ``relay --help`` groups its commands into (Typer's ``rich_help_panel``).

One table here rather than an argument on each ``app.command()``: the grouping
reads at a glance, and a test checks that every command is in a panel.
"""

from __future__ import annotations

from typing import Any

import typer

PANELS: dict[str, tuple[str, ...]] = {
    "Conversations": (
        "start", "list", "show", "transcript", "history", "result", "pause", "resume",
        "cancel", "send", "receive", "wait", "watch", "inbox", "retry", "drafts", "approve",
        "reject",
    ),
    "Contacts": ("contact",),
    "Campaigns": ("import", "stats"),
    "Running": ("status", "tick", "daemon", "serve", "mcp", "doctor", "demo"),
    "Data": ("init", "config", "db", "events", "inspect"),
}  # fmt: skip

PANEL_OF: dict[str, str] = {name: panel for panel, names in PANELS.items() for name in names}


def apply(app: typer.Typer) -> None:
    """Put each registered command and command group in its panel."""
    infos: list[Any] = [*app.registered_commands, *app.registered_groups]
    for info in infos:
        callback = info.callback.__name__ if info.callback else ""
        name = info.name or callback.lower().replace("_", "-").rstrip("-")
        info.rich_help_panel = PANEL_OF.get(name)


_ORDER = {name: i for i, name in enumerate(n for names in PANELS.values() for n in names)}


def ordered(names: list[str]) -> list[str]:
    """Command names panel by panel, in :data:`PANELS` order (help lists panels in
    the order their first command comes); unknown names last, as they came."""
    return sorted(names, key=lambda name: _ORDER.get(name, len(_ORDER)))
