"""Option values of plain types coerced without pydantic: a read command starts sooner.

Typer 0.29 builds a pydantic ``TypeAdapter`` for every parameter of the command
being run (``typer/_coercion.py``): importing pydantic and generating a schema
per option cost ``relay list`` about 100 ms of a 0.6 s run, more than the
query. relay's options are all ``str``, ``int``, ``float``, ``bool``, ``Path``
or a list of those, without ranges, parsers or choices, and converting those is
a line each. This converts them (with Click's wording for a bad value) and
hands anything else to typer's own coercion, unchanged.

Installed once, when :mod:`relay.cli.main` is imported (typer exposes no hook;
it is pinned below 0.30). ``tests/unit/test_cli_coercion.py`` checks that every
relay option takes the plain path and that bad values are refused as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam, TypeDescriptor
from typer.core import _TyperParameter

_ORIGINAL = _TyperParameter.get_runtime_param

_BOOLEANS = {
    "1": True, "true": True, "t": True, "yes": True, "y": True, "on": True,
    "0": False, "false": False, "f": False, "no": False, "n": False, "off": False, "": False,
}  # fmt: skip


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _number(kind: type[int] | type[float], word: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, kind) and not isinstance(value, bool):
            return value
        try:
            return kind(_text(value).strip())
        except ValueError:
            raise ValueError(f"{value!r} is not a valid {word}.") from None

    return convert


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    found = _BOOLEANS.get(_text(value).strip().lower())
    if found is None:
        raise ValueError(f"{value!r} is not a valid boolean.")
    return found


def _path(value: Any) -> Path:
    return value if isinstance(value, Path) else Path(_text(value))


_CONVERTERS: dict[Any, Callable[[Any], Any]] = {
    str: _text,
    int: _number(int, "integer"),
    float: _number(float, "float"),
    bool: _boolean,
    Path: _path,
}


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """A plain value (or a list of them) converted by a function of one argument."""

    convert: Callable[[Any], Any]

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        try:
            if isinstance(value, (list, tuple)):
                return [self.convert(item) for item in value]
            return self.convert(value)
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None


def plain_converter(descriptor: TypeDescriptor) -> Callable[[Any], Any] | None:
    """The conversion for a parameter relay can coerce itself, else None."""
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.is_file:
        return None
    if descriptor.is_ranged or descriptor.is_choice:
        return None
    annotation: Any = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation) or (None,)
    if annotation is Path and _checks_the_path(info):
        return None
    return _CONVERTERS.get(annotation)


def _checks_the_path(info: Any) -> bool:
    """Whether a Path option asks typer to look at the file system (left to typer)."""
    return bool(
        info.exists
        or not info.file_okay
        or not info.dir_okay
        or info.writable
        or info.resolve_path
        or info.allow_dash
        or info.path_type is not None
    )


def get_runtime_param(self: _TyperParameter) -> RuntimeParam:
    if self._runtime_param is None:
        convert = plain_converter(self.type_descriptor)
        if convert is None:
            return _ORIGINAL(self)
        self._runtime_param = PlainRuntimeParam(
            parameter_info=self.type_descriptor.parameter_info,
            annotation=self.type_descriptor.annotation,
            convert=convert,
        )
    return self._runtime_param


def install() -> None:
    """Coerce plain option values without pydantic (idempotent)."""
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
