"""How a configuration key's value is read: the kinds a key can be declared with
(:func:`key`), and the one check that turns a value of the file, a ``RELAY_*``
variable or a flag into its type (:func:`read_value`). The keys themselves are
declared in :mod:`relay.settings`."""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import timedelta
from typing import Any, TypeVar

from relay.core.durations import parse_duration
from relay.core.errors import ConfigError, InvalidInput

#: How a key's value is read. A whole number is a count at least that large.
TEXT = "text"  # any text
NAME = "name"  # text that must not be empty
OPTIONAL = "optional"  # text; empty means None (not set)
DURATION = "duration"  # "90s", "30m", "1h30m", or a bare number of seconds as text
SECONDS = "seconds"  # a duration, or a number of seconds (TOML ``timeout = 60``)
TABLES = "tables"  # an array of tables (``[[notify]]``), kept as written
BOOL = "bool"  # true or false (a ``RELAY_*`` variable: 1, true, yes or on)
APPROVAL = "approval"  # none, first or all (relay.core.approval)
OPTOUT_SCOPE = "optout_scope"  # contact or channel (relay.core.optout_scope)
WINDOW = "window"  # a sending window ("mon-fri 09:00-18:00"); empty means None (any time)

Kind = str | int
T = TypeVar("T")


def key(default: Any, kind: Kind, help: str) -> Any:
    """Declare a key as a field of its section: its default, kind and help text.

    The field itself has no default (a :class:`Settings` is only ever built from
    a whole configuration); the declared default is what :data:`DEFAULTS` holds.
    """
    return field(metadata={"default": default, "kind": kind, "help": help})


@dataclass(frozen=True)
class Declared:
    """One key as declared: what the defaults, the kinds and the docs read."""

    name: str
    default: Any
    kind: Kind
    help: str


def _sections(root: type) -> Iterator[tuple[str, type | None]]:
    """Each field of ``root`` (:class:`relay.settings.Settings`): its name and, for a
    section, its class."""
    hints = typing.get_type_hints(root)
    for item in fields(root):
        kind = hints[item.name]
        yield item.name, kind if is_dataclass(kind) and isinstance(kind, type) else None


def declared_keys(root: type) -> tuple[Declared, ...]:
    """Every key declared under ``root``, in its order: ``section.field``, or a field
    of ``root`` itself (``notify``)."""
    found = []
    for name, section in _sections(root):
        owner, prefix = (section, f"{name}.") if section is not None else (root, "")
        for item in fields(owner):
            if section is None and item.name != name:
                continue
            meta = item.metadata
            found.append(Declared(prefix + item.name, meta["default"], meta["kind"], meta["help"]))
    return tuple(found)


def build(
    root: type[T],
    keys: tuple[Declared, ...],
    values: Mapping[str, Any],
    sources: Mapping[str, str],
) -> T:
    """``root`` built from flat ``values``, each read as its key's kind (unset: its
    default); ``sources`` says where each was set."""
    declared = {k.name: k for k in keys}

    def typed(name: str) -> Any:
        value = values.get(name, declared[name].default)
        return read_value(declared[name].kind, name, value, sources.get(name, "default"))

    parts: dict[str, Any] = {}
    for name, section in _sections(root):
        if section is None:
            parts[name] = typed(name)
        else:
            parts[name] = section(**{f.name: typed(f"{name}.{f.name}") for f in fields(section)})
    return root(**parts)


def read_value(kind: Kind | None, key: str, value: Any, where: str) -> Any:
    """``value`` of ``key`` as its ``kind``, or a ConfigError naming the key and ``where``
    it was set (the one check of a value, for the file, the environment and flags)."""
    if isinstance(kind, int):
        return _count(key, value, where, kind)
    if kind == SECONDS and isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)  # TOML ``timeout = 60``
    if kind is None:
        return value
    if kind == BOOL:
        return _flag(key, value, where)
    if kind == TABLES:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {key} must be an array of tables ([[{key}]])")
        return tuple(value)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be text, not {value!r}")
    return _text(key, value, where, kind)


def _text(key: str, value: str, where: str, kind: str) -> Any:
    if kind == NAME and not value.strip():
        raise ConfigError(f"{where}: {key} must not be empty")
    if kind == OPTIONAL:
        return value.strip() or None
    if kind == WINDOW:
        return _window(key, value, where)
    if kind in (APPROVAL, OPTOUT_SCOPE):
        return _choice(key, value, where, kind)
    if kind in (DURATION, SECONDS):
        try:
            return parse_duration(value)
        except InvalidInput as exc:
            raise ConfigError(f"{where}: {key}: {exc.message}") from None
    return value


def _choice(key: str, value: str, where: str, kind: str) -> str:
    """A key taking one of a few words (case does not matter)."""
    from relay.core.approval import MODES
    from relay.core.optout_scope import SCOPES

    words = MODES if kind == APPROVAL else SCOPES
    if value.strip().lower() not in words:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(words)}, not {value!r}")
    return value.strip().lower()


def _window(key: str, value: str, where: str) -> str | None:
    """A sending window, checked when the configuration is read (a start would
    refuse it later, without naming the file); empty: any time."""
    from relay.core.windows import parse_window

    if not value.strip():
        return None
    try:
        parse_window(value)
    except InvalidInput as exc:
        raise ConfigError(f"{where}: {key}: {exc.message}") from None
    return value.strip()


def _flag(key: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _count(key: str, value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: {key} must be a whole number, not {value!r}")
    if value < least:
        bound = "must not be negative" if least == 0 else f"must be at least {least}"
        raise ConfigError(f"{where}: {key} {bound}, not {value!r}")
    return value
