"""The process runtime: long-running processes over the engine.

``daemon`` (the APScheduler jobs of ``relay daemon``), ``foreground`` (the daemon
run in the foreground, PID file and lock around it, and ``relay serve``'s server),
``pulse`` (one pass over all due work: what ``relay tick`` and each daemon pulse
run, the pushes ``relay serve`` stored taken first), ``summary`` (the daemon's line
a minute), ``process`` (the daemon as an OS process: PID file, single-daemon lock,
detaching, stopping), ``serve`` (``relay serve``'s app: its routes, their handlers,
and the one writer that stores what the requests bring), ``metrics`` (its
``/metrics``, loaded at the first scrape), ``logs`` (text or JSON logs of those
processes), ``retention`` (what the daemon prunes) and ``demo`` (``relay demo``).
"""
