"""Placeholders in ``--help``: words a reader knows, not Python type names.

Typer 0.29's Rich help prints each parameter's Python type as ``<str>``,
``<int>`` or ``<list[str]>`` in a column of its own, and writes required
arguments as ``{contact}`` in the usage line. On a terminal of 60-80 columns
that column takes up to 13 characters from the description (squeezed to a
word per line), and ``<str>`` tells the reader nothing. Here the type column
shows the parameter's metavar when it has one, else a short upper-case word
(TEXT, INTEGER, NUMBER; nothing for a flag), and the usage line names
arguments in upper case, as Click and most Unix tools do.

Applied once, when :mod:`relay.cli.main` is imported (typer exposes no hook for
it); ``tests/test_cli_help.py`` checks the result at 60 and 80 columns.
"""

from __future__ import annotations

from typing import Any

from typer._click import Context
from typer.core import TyperArgument, TyperOption

#: What a parameter of a plain Python type expects, in the words of ``--help``.
WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "bool": "", "Path": "PATH"}


def placeholder(param: TyperArgument | TyperOption, ctx: Context) -> str | None:
    """The type column's text: the metavar, the choices, or a word for the type."""
    if param.metavar:  # an argument's metavar is already its name in the first column
        return None if isinstance(param, TyperArgument) else param.metavar
    if isinstance(param, TyperOption) and param.is_flag:
        return None
    label = _PLAIN[type(param)](param, ctx).strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    word = WORDS.get(label, label if "|" in label else label.upper())
    return word or None


def _usage_name(param: TyperArgument) -> str:
    name = (param.metavar or param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


_PLAIN: dict[type, Any] = {
    TyperOption: TyperOption.display_type_rich,
    TyperArgument: TyperArgument.display_type_rich,
}


def install() -> None:
    """Replace typer's type labels (idempotent)."""
    TyperOption.display_type_rich = placeholder  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = placeholder  # type: ignore[method-assign,assignment]
    TyperArgument._usage_display_name = _usage_name  # type: ignore[method-assign,assignment]
