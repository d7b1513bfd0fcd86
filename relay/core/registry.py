"""Backends by name: built-ins and third-party packages register the same way.

Agents and channels each keep one :class:`Registry`. Built-ins live in a module
imported on first use (so a read command never imports httpx or smtplib);
third-party packages add factories through a Python entry-point group, loaded
once per process, when a name no built-in has is asked for or every name is
listed (a scan of every installed package: about 5 ms a group).
"""

from __future__ import annotations

import importlib
from typing import Generic, TypeVar

from relay.core.errors import ConfigError

F = TypeVar("F")


class Registry(Generic[F]):
    def __init__(self, group: str, builtins: str, what: str) -> None:
        self.group = group
        self.what = what
        self._builtins_module = builtins
        self._factories: dict[str, F] = {}
        self._builtins_loaded = False
        self._entry_points_loaded = False

    def register(self, name: str, factory: F) -> None:
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)

    def _load_builtins(self) -> None:
        if not self._builtins_loaded:
            self._builtins_loaded = True
            importlib.import_module(self._builtins_module)

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=self.group):
            if entry.name not in self._factories:
                self._factories[entry.name] = entry.load()

    def names(self) -> list[str]:
        self._load_builtins()
        self._load_entry_points()
        return sorted(self._factories)

    def has(self, name: str) -> bool:
        """Whether ``name`` is known. The entry points are read only for a name no
        built-in has: a ``relay start`` on a built-in agent and channel skips the
        scan of every installed package (two scans, about 11 ms of the command)."""
        self._load_builtins()
        if name not in self._factories:
            self._load_entry_points()
        return name in self._factories

    def get(self, name: str) -> F:
        if not self.has(name):
            raise ConfigError(f"unknown {self.what} {name!r} (known: {', '.join(self.names())})")
        return self._factories[name]
