"""JSON Schemas of every ``relay ... --json`` output (see docs/json.md).

The definitions the schemas share (a conversation, its todos, messages, history
and result) are written once, in ``defs.json``; each command's schema refers to
them as ``defs.json#/$defs/NAME``. :func:`registry` resolves those references
from the package itself, offline: every schema's ``$id`` is under
``https://relay.invalid/schemas/``, an address nothing answers.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry

BASE = "https://relay.invalid/schemas/"
DEFINITIONS = "defs.json"


def names() -> list[str]:
    """Every schema file in the package, ``defs.json`` included."""
    folder = resources.files(__name__)
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (``"instance"`` or ``"instance.json"``) as a dict."""
    filename = name if name.endswith(".json") else f"{name}.json"
    text = resources.files(__name__).joinpath(filename).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def registry() -> Registry[Any]:
    """Every schema of the package by its ``$id``, so ``$ref`` never goes to the network."""
    # jsonschema and referencing only for a program that validates, never on a CLI path.
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources_ = [
        (document["$id"], Resource.from_contents(document, default_specification=DRAFT202012))
        for document in map(load, names())
    ]
    return Registry().with_resources(resources_)


def validator(name: str) -> Validator:
    """A draft 2020-12 validator for the schema ``name``, its references resolved offline."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load(name), registry=registry())
