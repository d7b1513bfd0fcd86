"""The process runtime: long-running processes over the engine.

``daemon`` (the APScheduler jobs of ``relay daemon``), ``foreground`` (the
daemon run in the foreground: PID file and lock around it) and ``pulse`` (one
pass over all due work: what ``relay tick`` and each daemon pulse run),
``summary`` (the daemon's line a minute), ``process`` (the daemon as an OS
process: PID file, single-daemon lock, detaching, stopping), ``serve``,
``serve_http`` and ``serve_routes`` (``relay serve``: the app, what its
handlers share, the handlers), ``metrics`` (its ``/metrics``), ``logs`` (text or
JSON logs of those processes), ``retention`` (what the daemon prunes) and
``demo`` (``relay demo``).
"""
