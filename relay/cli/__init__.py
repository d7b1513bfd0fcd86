"""The ``relay`` command (:mod:`relay.cli.main`).

Loading the command (Typer, Rich, SQLAlchemy, relay's modules) makes a few
hundred thousand objects that live as long as the process. While they are
made, the cyclic collector walks them again and again and frees none: about
30 ms of a cold ``relay list``. So the collector is paused from here until
:mod:`relay.cli.main` has loaded, and while the API is imported and opened
(:meth:`relay.cli.session.Session.relay`). At the end of a pause what was
loaded is frozen (``gc.freeze``: later collections skip it, and the first one
does not walk it all at once); the collector runs as usual for the command
itself, so the daemon and ``relay watch`` collect as always.

Only the ``relay`` command itself (the console script, ``python -m relay``)
pauses: a program that imports one of these modules (a test, a host that
embeds relay) keeps its collector as it was.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath


def _is_the_relay_command() -> bool:
    script = PurePath(sys.argv[0]) if sys.argv and sys.argv[0] else PurePath()
    return script.stem == "relay" or script.parts[-2:] == ("relay", "__main__.py")


#: Whether this process is the relay command: the only one that pauses.
_COMMAND = _is_the_relay_command()
_paused = _COMMAND and gc.isenabled()
if _paused:
    gc.disable()


def resume_collector() -> None:
    """End the pause that importing this package began, if it began one."""
    if _paused:
        gc.freeze()
        gc.enable()


@contextmanager
def collector_paused(*, when: bool = True) -> Iterator[None]:
    """No cyclic collection while the relay command loads modules that live for
    the process (``when`` False, or another process: no pause, nothing frozen)."""
    if not (when and _COMMAND and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
