"""The web console of ``relay serve`` (``/ui/``): see :mod:`relay.console.app`."""
