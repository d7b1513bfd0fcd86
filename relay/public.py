"""The names :mod:`relay.api` re-exports besides :class:`relay.api.Relay`: the
errors, the views, the configuration, what a program does around a relay
(:mod:`relay.admin`), and names loaded on first use. Import them from relay.api.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay.admin import (
    SchemaRevision,
    create_database,
    daemon_log_path,
    daemon_pid,
    downgrade_schema,
    run_demo,
    schema_revision,
    start_daemon,
    stop_daemon,
    upgrade_schema,
)
from relay.config import Config, load_config
from relay.core.errors import (
    Ambiguous,
    ConfigError,
    Conflict,
    Erased,
    InvalidInput,
    NoConsent,
    NotFound,
    OptedOut,
    Refused,
    RelayError,
    SchemaOutOfDate,
    Undeliverable,
)
from relay.engine.views.events import EventView
from relay.engine.views.instances import ContactView, InstanceView, MessageView, TransitionView
from relay.engine.views.reports import ContactRow, InboxItem, ResultView, StatsView, WatchRow
from relay.engine.views.status import DaemonView, StatusView

if TYPE_CHECKING:  # loaded on first use (_LAZY); ``X as X``: re-exported
    from relay.engine.contacts.chat_links import ChatLink as ChatLink
    from relay.engine.runtime import channels_of_type as channels_of_type
    from relay.engine.verbs.campaigns import ImportReport as ImportReport
    from relay.engine.verbs.drafts import DraftView as DraftView
    from relay.engine.verbs.mail_dns import MailCheck as MailCheck
    from relay.engine.verbs.mail_dns import check_email as check_email
    from relay.engine.verbs.privacy import Erasure as Erasure
    from relay.engine.verbs.program import parse_meta as parse_meta
    from relay.inspection import inspect_address as inspect_address
    from relay.inspection import inspect_mail as inspect_mail
    from relay.inspection import inspect_text as inspect_text
    from relay.runner.logs import configure_logging as configure_logging

#: Loaded now, and by ``from relay.public import *``.
# fmt: off
__all__ = [
    "Ambiguous", "Config", "ConfigError", "Conflict", "ContactRow", "ContactView", "DaemonView",
    "Erased", "EventView", "InboxItem", "InstanceView", "InvalidInput", "MessageView", "NoConsent",
    "NotFound",
    "OptedOut", "Refused", "RelayError", "ResultView", "SchemaOutOfDate", "SchemaRevision",
    "StatsView", "StatusView", "TransitionView", "Undeliverable", "WatchRow", "create_database",
    "daemon_log_path", "daemon_pid", "downgrade_schema", "load_config", "run_demo",
    "schema_revision", "start_daemon", "stop_daemon", "upgrade_schema",
]
# fmt: on

#: Names loaded on first use: most commands never import a CSV, parse --meta, link
#: a chat or configure the daemon's logging.
_LAZY = {
    "ChatLink": "relay.engine.contacts.chat_links",
    "DraftView": "relay.engine.verbs.drafts",
    "Erasure": "relay.engine.verbs.privacy",
    "MailCheck": "relay.engine.verbs.mail_dns",
    "check_email": "relay.engine.verbs.mail_dns",
    "ImportReport": "relay.engine.verbs.campaigns",
    "channels_of_type": "relay.engine.runtime",
    "configure_logging": "relay.runner.logs",
    "parse_meta": "relay.engine.verbs.program",
    "inspect_mail": "relay.inspection",
    "inspect_text": "relay.inspection",
    "inspect_address": "relay.inspection",
}
#: Every name relay.api exports besides Relay.
NAMES = [*__all__, *_LAZY]
if TYPE_CHECKING:  # a type checker follows ``relay.api``'s star import to these too
    __all__ += ["ChatLink", "DraftView", "ImportReport", "channels_of_type", "parse_meta"]
    __all__ += ["configure_logging", "inspect_address", "inspect_mail", "inspect_text"]
    __all__ += ["Erasure", "MailCheck", "check_email"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
