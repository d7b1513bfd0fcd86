"""The process runtime: long-running processes over the engine.

``serve`` (``relay serve``, the inbound HTTP endpoint), ``process`` (the daemon as
an OS process: PID file, single-daemon lock, detaching, stopping), ``logs`` (text
or JSON logs of those processes) and ``retention`` (what the daemon prunes). The
pulse and the daemon's scheduler still live in :mod:`relay.engine` until the
follow-up rewrite moves them here.
"""
