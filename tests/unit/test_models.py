"""The mapped classes annotate the tables' columns, not a second schema: every
column is annotated, nothing else is, and ``X | None`` exactly where the column
takes NULL (the type checker trusts these annotations; the database follows the
tables)."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from sqlalchemy.orm import Mapped

from relay.store import models, tables
from relay.store.models import Base


def _mapped() -> list[type[Base]]:
    return sorted((mapper.class_ for mapper in Base.registry.mappers), key=lambda c: c.__name__)


def _optional(hint: Any) -> bool | None:
    """Whether the annotation takes None (None: ``Any``, which says nothing)."""
    (inner,) = typing.get_args(hint)
    if inner is Any:
        return None
    return typing.get_origin(inner) is types.UnionType and type(None) in typing.get_args(inner)


def test_every_table_has_one_mapped_class() -> None:
    mapped = sorted(model.__table__.name for model in _mapped())  # type: ignore[attr-defined]
    assert mapped == sorted(tables.metadata.tables)


@pytest.mark.parametrize("model", _mapped(), ids=lambda model: model.__name__)
def test_annotations_follow_the_table(model: type[Base]) -> None:
    table = models.table_of(model)
    hints = typing.get_type_hints(model, vars(models))
    annotated = {name: hint for name, hint in hints.items() if typing.get_origin(hint) is Mapped}
    assert list(annotated) == [column.key for column in table.columns]
    wrong = [
        column.key
        for column in table.columns
        if _optional(annotated[column.key]) not in (None, bool(column.nullable))
    ]
    assert wrong == []
