"""The schemas' shared definitions are written once, in ``relay/schemas/defs.json``,
and every reference to them resolves from the package, without the network."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from referencing.exceptions import Unresolvable

from relay import schemas


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_only_the_definitions_file_holds_definitions() -> None:
    holders = [n for n in schemas.names() if "$defs" in schemas.load(n)]
    assert holders == [schemas.DEFINITIONS]


def test_every_reference_resolves_from_the_package() -> None:
    registry = schemas.registry()
    used: set[str] = set()
    for name in schemas.names():
        document = schemas.load(name)
        resolver = registry.resolver(base_uri=document["$id"])
        for ref in _refs(document):
            assert ref.startswith(("#/$defs/", f"{schemas.DEFINITIONS}#/$defs/")), (name, ref)
            resolved = resolver.lookup(ref)
            assert resolved.contents, (name, ref)
            used.add(ref.rpartition("/")[2])
    # Every shared definition is used somewhere (none is left behind by an edit).
    assert used == set(schemas.load(schemas.DEFINITIONS)["$defs"])


def test_a_reference_to_a_missing_definition_fails_offline() -> None:
    resolver = schemas.registry().resolver(base_uri=schemas.BASE + "instance.json")
    with pytest.raises(Unresolvable):
        resolver.lookup("defs.json#/$defs/nothing")
    with pytest.raises(Unresolvable):
        resolver.lookup("https://json-schema.invalid/elsewhere.json")


def test_a_shared_definition_validates_through_a_commands_schema() -> None:
    validator = schemas.validator("instance-list")
    assert list(validator.iter_errors([{"schema_version": 1, "id": 7}]))
    assert list(validator.iter_errors([])) == []
