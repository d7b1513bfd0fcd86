"""The process runtime: long-running processes over the engine.

``daemon`` (the APScheduler jobs of ``relay daemon``) and ``pulse`` (one pass
over all due work: what ``relay tick`` and each daemon pulse run), ``summary``
(the daemon's line a minute), ``process`` (the daemon as an OS process: PID
file, single-daemon lock, detaching, stopping), ``serve`` and ``serve_routes``
(``relay serve``, the inbound HTTP endpoint, and its handlers), ``logs`` (text
or JSON logs of those processes), ``retention`` (what the daemon prunes) and
``demo`` (``relay demo``).
"""
