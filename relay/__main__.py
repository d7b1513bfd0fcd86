"""``python -m relay``: the same as the ``relay`` command (used by ``relay daemon --detach``)."""

from relay.cli.main import run

run()
