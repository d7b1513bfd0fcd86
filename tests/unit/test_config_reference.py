"""Each configuration key is declared once (relay/settings.py); the defaults, the
kinds, the typed settings and the table of docs/configuration.md follow from it."""

from __future__ import annotations

import typing
from dataclasses import fields, is_dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from relay import config, settings
from relay.cli import config_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_configuration_reference_matches_the_declarations() -> None:
    page = DOC.read_text(encoding="utf-8")
    assert config_reference.rewrite(page) == page, (
        "docs/configuration.md is out of date; run `python -m relay.cli.config_reference`"
    )


def test_check_fails_on_a_drifted_page_and_the_rewrite_mends_it(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(DOC.read_text(encoding="utf-8").replace("`30m`", "`45m`"), encoding="utf-8")
    assert config_reference.main([str(page), "--check"]) == 1
    assert config_reference.main([str(page)]) == 0
    assert config_reference.main([str(page), "--check"]) == 0
    assert page.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        config_reference.rewrite("# Configuration\n")


def _leaves() -> dict[str, object]:
    """Every typed field of Settings by its dotted key, with its annotation."""
    found: dict[str, object] = {}
    for name, kind in typing.get_type_hints(settings.Settings).items():
        if is_dataclass(kind) and isinstance(kind, type):
            hints = typing.get_type_hints(kind)
            found.update({f"{name}.{f.name}": hints[f.name] for f in fields(kind)})
        else:
            found[name] = kind
    return found


EXPECTED_TYPE = {
    settings.TEXT: str,
    settings.NAME: str,
    settings.OPTIONAL: str | None,
    settings.WINDOW: str | None,
    settings.DURATION: timedelta,
    settings.SECONDS: timedelta,
    settings.APPROVAL: str,
    settings.OPTOUT_SCOPE: str,
}


def test_every_typed_field_is_a_declared_key_of_its_kinds_type() -> None:
    leaves = _leaves()
    assert list(leaves) == [k.name for k in settings.KEYS]
    assert list(config.DEFAULTS) == list(leaves)
    for key in settings.KEYS:
        annotation = leaves[key.name]
        if isinstance(key.kind, int):
            assert annotation is int, key.name
        elif key.kind == settings.BOOL:
            assert annotation is bool, key.name
        elif key.kind == settings.TABLES:
            assert typing.get_origin(annotation) is tuple, key.name
        else:
            assert annotation == EXPECTED_TYPE[key.kind], key.name
        assert key.help and not key.help.endswith("."), key.name


def test_the_typed_defaults_are_the_declared_defaults_converted() -> None:
    built = settings.build_settings(config.DEFAULTS, {})
    for key in settings.KEYS:
        section, _, name = key.name.rpartition(".")
        value = getattr(getattr(built, section), name) if section else getattr(built, name)
        assert value == settings.convert(key.name, key.default, "default"), key.name
    assert built.defaults.window is None and built.defaults.heartbeat == timedelta(minutes=30)
    assert built.notify == () and built.daemon.batch == 500
