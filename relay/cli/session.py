"""What every command shares: the session the global options chose, and the
``--json`` option.

A module of its own so that the command modules need not import
:mod:`relay.cli.main` (which imports them to register them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from relay.api import Config, Relay

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for programs.")]


@dataclass
class Session:
    """What the global options chose; commands open the API lazily through it."""

    config_path: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    #: ``--actor``: who runs the command, for the audit log.
    actor: str | None = None
    _config: Config | None = None
    _relay: Relay | None = None

    def config(self) -> Config:
        if self._config is None:
            from relay.config import load_config

            self._config = load_config(self.config_path, overrides=self.overrides)
        return self._config

    def set_override(self, key: str, value: Any) -> None:
        """Override one setting as a flag would (before the configuration is read)."""
        self.overrides[key] = value
        self._config = None

    def relay(self) -> Relay:
        if self._relay is None:
            import sys

            from relay.cli import collector_paused

            # The first open loads the API, SQLAlchemy and the models: paused
            # (see relay.cli). Later opens in the same process load nothing new.
            with collector_paused(when="relay.api" not in sys.modules):
                from relay.api import Relay

                self._relay = Relay.open(self.config())
            self._relay.actor = self.actor
        return self._relay

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None


state = Session()
