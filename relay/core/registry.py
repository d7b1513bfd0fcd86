"""Backends by name: built-ins and third-party packages register the same way.

Agents and channels each keep one :class:`Registry`. A built-in is named the way an
entry point names its factory, ``"module:attr"``, and its module is imported when a
backend of that kind is first built (so a read command never imports httpx or
smtplib, and building one calls the backend's own factory, with no layer between).
Third-party packages add factories through a Python entry-point group, loaded once
per process, when a name no built-in has is asked for or every name is listed (a
scan of every installed package: about 5 ms a group).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from relay.core.errors import ConfigError

F = TypeVar("F")


class Registry(Generic[F]):
    def __init__(self, group: str, builtins: Mapping[str, str | F], what: str) -> None:
        self.group = group
        self.what = what
        # A str is a built-in not yet imported ("module:attr"); get() replaces it.
        self._factories: dict[str, str | F] = dict(builtins)
        self._entry_points_loaded = False

    def register(self, name: str, factory: F) -> None:
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=self.group):
            if entry.name not in self._factories:
                self._factories[entry.name] = entry.load()

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._factories)

    def has(self, name: str) -> bool:
        """Whether ``name`` is known. The entry points are read only for a name no
        built-in has: a ``relay start`` on a built-in agent and channel skips the
        scan of every installed package (two scans, about 11 ms of the command)."""
        if name not in self._factories:
            self._load_entry_points()
        return name in self._factories

    def get(self, name: str) -> F:
        if not self.has(name):
            raise ConfigError(f"unknown {self.what} {name!r} (known: {', '.join(self.names())})")
        factory = self._factories[name]
        if isinstance(factory, str):
            loaded: F = load_path(factory)
            self._factories[name] = loaded
            return loaded
        return factory


def load_path(path: str) -> Any:
    """``"module:attr.attr"``, as an entry point's value names its object."""
    module, _, attrs = path.partition(":")
    found: Any = importlib.import_module(module)
    for attr in attrs.split("."):
        found = getattr(found, attr)
    return found
