"""``relay serve``: the inbound HTTP endpoint for provider webhooks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from relay.cli.session import state

MAX_BODY = 64 * 1024


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port to listen on.")] = 8080,
    max_body: Annotated[
        int, typer.Option("--max-body", help="Refuse request bodies over this many bytes (413).")
    ] = MAX_BODY,
    log_format: Annotated[str, typer.Option("--log-format", help="text or json.")] = "text",
    log_file: Annotated[
        Path | None, typer.Option("--log-file", help="Write the log here instead of stderr.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Receive replies, delivery receipts and unsubscribes over HTTP (SIGTERM stops it).

    Routes: POST /twilio/CHANNEL/inbound, POST /twilio/CHANNEL/status,
    POST /webhook/CHANNEL/inbound, POST /telegram/CHANNEL/webhook,
    POST /unsubscribe/TOKEN, GET /healthz, GET /metrics (Prometheus; [metrics]),
    and the web console under /ui/ when [console] enabled = true (it then
    listens on loopback only; see docs/console.md). Each request is verified,
    stored in one transaction and answered at once; `relay daemon` does the
    work. Put it behind a TLS reverse proxy and set each channel's public_url
    to the address the provider calls (see docs/channels.md).
    """
    from relay.api import configure_logging

    configure_logging(log_format, verbose, log_file, owns_process=True)
    state.relay().serve_http(host, port, max_body=max_body)


def register(app: typer.Typer) -> None:
    app.command()(serve)
