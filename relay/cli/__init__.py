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
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_collecting = gc.isenabled()
gc.disable()


def resume_collector() -> None:
    """End the pause that importing this package began (as it was before it)."""
    gc.freeze()
    if _collecting:
        gc.enable()


@contextmanager
def collector_paused(*, when: bool = True) -> Iterator[None]:
    """No cyclic collection while loading modules that live for the process
    (``when`` False: no pause, nothing frozen)."""
    if not when:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
