"""SMS and WhatsApp through the Twilio Messages API, with plain ``httpx``.

Why not the ``twilio`` SDK: relay needs three calls (create a message, list
messages, and checking webhook signatures, see :mod:`twilio_signature`), needs
the HTTP status, Twilio's error code and ``Retry-After`` of every failure to
decide between "retry", "hand to a human", "opt the contact out" and "keep it
queued", and already depends on httpx. The SDK would add requests, aiohttp and
PyJWT to every install and retry on its own schedule.

Twilio pushes replies and delivery receipts to ``relay serve``
(``/twilio/<channel>/inbound`` and ``/twilio/<channel>/status``); ``poll`` is for
users without a public URL and reads the Messages list instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from relay.channels.base import (
    ChannelError,
    ChannelUnavailable,
    Inbound,
    Incoming,
    Outbound,
    PermanentChannelError,
    Receipt,
    RecipientOptedOut,
    missing_env,
    secret_from_env,
    setting_flag,
    setting_required,
    setting_seconds,
)
from relay.channels.fate import Fate, Reconciled
from relay.channels.pacing import Booking, SegmentPacer
from relay.channels.segments import segment_count
from relay.core.errors import ConfigError
from relay.core.values import DeliveryStatus, InboundKind

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("relay.channels.twilio")

DEFAULT_API = "https://api.twilio.com"
WHATSAPP_WINDOW = timedelta(hours=24)
FIRST_LOOKBACK = timedelta(days=1)
OPT_OUT_KEYWORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"})
HELP_KEYWORDS = frozenset({"HELP", "INFO"})
DEFAULT_HELP = "Reply STOP to stop receiving messages, START to receive them again."

#: Twilio error codes relay gives a meaning to (also in docs/channels.md).
ERROR_TEXT = {
    20003: "authentication failed: check account_sid and the auth token",
    21211: "invalid 'To' phone number",
    21408: "sending to this region is not enabled on the Twilio account",
    21610: "the recipient has opted out (replied STOP)",
    21614: "'To' is not a mobile number",
    30003: "unreachable handset",
    30004: "message blocked by the recipient",
    30005: "unknown destination handset",
    30006: "landline or unreachable carrier",
    30007: "filtered by the carrier as spam",
    63014: "the recipient blocked this WhatsApp sender",
    63016: "outside the WhatsApp 24-hour session window (send an approved template)",
}
#: The number will never receive a message: the contact becomes undeliverable.
PERMANENT_CODES = frozenset({21211, 21614, 30005, 30006})
STATUS_MAP = {
    "sent": DeliveryStatus.SENT,
    "delivered": DeliveryStatus.DELIVERED,
    "read": DeliveryStatus.READ,
    "undelivered": DeliveryStatus.UNDELIVERED,
    "failed": DeliveryStatus.FAILED,
}


class TwilioChannel:
    """``sms`` and ``whatsapp``: WhatsApp is SMS with a prefix, a 24-hour window, templates."""

    #: Outbound.thread and the unsubscribe link are not read here (the outbox then
    #: looks up neither; a text's opt-out is a STOP reply).
    threads = unsubscribe_links = False

    def __init__(self, name: str, kind: str, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.kind = kind
        self.account_sid = setting_required(name, settings, "account_sid")
        self.token_env = setting_required(name, settings, "auth_token_env")
        self.sender = _number(setting_required(name, settings, "from"))
        self.public_url = str(settings.get("public_url") or "").rstrip("/") or None
        self.api_url = str(settings.get("api_url") or DEFAULT_API).rstrip("/")
        self.timeout = setting_seconds(name, settings, "timeout", "15s")
        self.status_callback = setting_flag(name, settings, "status_callback", True)
        self.polling = setting_flag(name, settings, "polling", False)
        self.help_text = str(settings.get("help_text") or DEFAULT_HELP)
        self.template_sid = str(settings.get("template_sid") or "") or None
        self.template_variables = _template_variables(name, settings.get("template_variables"))
        try:
            rate = float(settings.get("segments_per_second", 1))
        except (TypeError, ValueError):
            raise ConfigError(f"channels.{name}.segments_per_second: expected a number") from None
        self.pacer = SegmentPacer(rate)
        for key in ("public_url", "api_url"):
            value = settings.get(key)
            if value and not str(value).startswith(("http://", "https://")):
                raise ConfigError(f"channels.{name}.{key}: expected an http(s):// URL")
        self._client: httpx.Client | None = None

    # -- the Channel protocol ---------------------------------------------------

    def send(self, message: Outbound) -> str:
        form = self._form(message)
        self.pacer.wait(self.sender, segment_count(message.text))
        url = f"{self.api_url}/2010-04-01/Accounts/{self.account_sid}/Messages.json"
        response = self._request("POST", url, data=form)
        sid = response.json().get("sid")
        if not sid:
            raise ChannelError(f"channel {self.name}: Twilio answered without a message sid")
        return str(sid)

    def poll(self, cursor: str | None) -> Incoming:
        """Inbound messages to our number since ``cursor`` (the newest ``date_sent``
        seen, ISO 8601). The list is read from that second on, so a message sent in
        the same second as the cursor comes again and the store drops it by sid."""
        if not self.polling:
            return Incoming(cursor=cursor)
        # The first poll looks back one day, not through the number's whole history.
        since = datetime.fromisoformat(cursor) if cursor else datetime.now(UTC) - FIRST_LOOKBACK
        items = self._list_inbound(since)
        newest = max((d for _, d in items), default=since)
        messages = [m for m, d in items if d >= since]
        return Incoming(messages=messages, cursor=newest.isoformat())

    def check(self) -> list[str]:
        """What is missing for this channel to send (``relay start`` and ``relay doctor``)."""
        problems = missing_env(self.name, "auth_token_env", self.token_env)
        if not self.public_url and not self.polling:
            problems.append(
                f"channel {self.name}: no public_url, so replies and delivery receipts "
                "could not reach relay serve (set public_url, or polling = true)"
            )
        return problems

    def address_problem(self, address: str) -> str | None:
        if address.startswith("+"):
            return None
        return (
            f"the {self.kind} channel {self.name} needs a phone number in E.164 form "
            f"(+15551230001), not {address!r}"
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def pace_with(
        self, book: Booking, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        """Keep this number's send slots elsewhere (the store, shared by processes),
        read on ``clock`` (seconds since the epoch, the same in every process)."""
        self.pacer = SegmentPacer(self.pacer.per_second, clock, sleep, book)

    def reconcile(self, message: Outbound, since: datetime, taken: frozenset[str]) -> Reconciled:
        """Whether Twilio took ``message`` (handed over at or after ``since``, then
        relay crashed): is it in the Messages list of what our number sent the
        recipient since that day, with its text and a sid that is not one of relay's
        other messages (``taken``)? (A WhatsApp template's text is not the message's.)"""
        base = f"{self.api_url}/2010-04-01/Accounts/{self.account_sid}/Messages.json"
        params: dict[str, str] = {
            "To": self._address(message.to),
            "From": self._address(self.sender),
            "DateSent>": since.date().isoformat(),
            "PageSize": "100",
        }
        url: str | None = base
        for _ in range(MAX_PAGES):
            if url is None:
                break
            data = self._request("GET", url, params=params).json()
            for item in data.get("messages") or []:
                if _is_ours(item, message.text, since, taken):
                    return Reconciled(Fate.SENT, provider_id=str(item.get("sid") or ""))
            next_uri = data.get("next_page_uri")
            url, params = (self.api_url + next_uri, {}) if next_uri else (None, {})
        if url is not None:
            return Reconciled(Fate.UNKNOWN, detail=f"more than {MAX_PAGES} pages to read")
        if self.kind == "whatsapp":
            return Reconciled(Fate.UNKNOWN, detail="not listed, but it may have gone as a template")
        return Reconciled(Fate.NOT_SENT)

    # -- sending ------------------------------------------------------------------

    def _form(self, message: Outbound) -> dict[str, str]:
        """The create-message parameters; outside WhatsApp's 24-hour window the
        text goes as the approved template, or not at all."""
        form = {"To": self._address(message.to), "From": self._address(self.sender)}
        if self.public_url and self.status_callback:
            form["StatusCallback"] = f"{self.public_url}/twilio/{self.name}/status"
        if self.kind == "whatsapp" and not _in_session(message):
            own = message.template
            sid = own.sid if own is not None else self.template_sid
            if not sid:
                raise PermanentChannelError(
                    f"channel {self.name}: {message.to} has not written in the last 24 hours, "
                    "so WhatsApp only takes an approved template; set template_sid "
                    f"in [channels.{self.name}] or start the conversation with "
                    "--whatsapp-template (no message was sent)"
                )
            form["ContentSid"] = sid
            form["ContentVariables"] = json.dumps(self._variables(message))
            return form
        form["Body"] = message.text
        return form

    def _variables(self, message: Outbound) -> dict[str, str]:
        """The conversation's variables if it has its own, else the channel's,
        with ``{text}`` and ``{instance_id}`` filled from the message."""
        values = {"text": message.text, "instance_id": message.instance_id or ""}
        own = dict(message.template.variables) if message.template is not None else {}
        chosen = own or self.template_variables
        return {k: v.format_map(values) for k, v in chosen.items()}

    def _address(self, number: str) -> str:
        return f"whatsapp:{number}" if self.kind == "whatsapp" else number

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        import httpx

        token = secret_from_env(self.name, self.token_env)
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        try:
            response = self._client.request(method, url, auth=(self.account_sid, token), **kwargs)
        except httpx.TimeoutException as exc:
            raise ChannelError(f"channel {self.name}: Twilio timed out ({exc})") from exc
        except httpx.TransportError as exc:
            raise ChannelError(f"channel {self.name}: Twilio unreachable ({exc})") from exc
        if response.status_code >= 300:
            raise api_error(self.name, response)
        return response

    # -- polling --------------------------------------------------------------------

    def _list_inbound(self, since: datetime) -> list[tuple[Inbound, datetime]]:
        base = f"{self.api_url}/2010-04-01/Accounts/{self.account_sid}/Messages.json"
        params: dict[str, str] = {"To": self._address(self.sender), "PageSize": "100"}
        params["DateSent>"] = since.date().isoformat()
        url: str | None = base
        found: list[tuple[Inbound, datetime]] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            data = self._request("GET", url, params=params).json()
            for item in data.get("messages") or []:
                parsed = _listed_inbound(item, self.kind)
                if parsed is not None:
                    found.append(parsed)
            next_uri = data.get("next_page_uri")
            url, params = (self.api_url + next_uri, {}) if next_uri else (None, {})
        return found


MAX_PAGES = 20


def api_error(name: str, response: httpx.Response) -> ChannelError:
    """Turn a failed Twilio API answer into the error that makes relay do the right thing."""
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = {}
    code = body.get("code") if isinstance(body, dict) else None
    text = ERROR_TEXT.get(code or 0) or str(body.get("message") or response.text[:200])
    detail = f"channel {name}: Twilio {code or status}: {text}"
    if status == 401 or code == 20003:
        return ChannelUnavailable(detail + "; messages stay queued until this is fixed")
    if status == 429 or status >= 500:
        return ChannelError(detail, retry_after=_retry_after(response))
    if code == 21610:
        return RecipientOptedOut(detail)
    return PermanentChannelError(detail)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _in_session(message: Outbound) -> bool:
    last = message.last_inbound_at
    return last is not None and datetime.now(UTC) - last < WHATSAPP_WINDOW


def _number(value: str) -> str:
    return value.removeprefix("whatsapp:").strip()


def _template_variables(name: str, value: Any) -> dict[str, str]:
    if value is None:
        return {"1": "{text}"}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f'channels.{name}.template_variables: expected a table such as {{ "1" = "{{text}}" }}'
        )
    return {str(k): str(v) for k, v in value.items()}


# -- what Twilio sends to relay serve ---------------------------------------------------------


def keyword_of(text: str) -> str:
    """The message as a carrier keyword (``" stop "`` -> ``STOP``)."""
    return " ".join(text.split()).upper().strip(".!")


def parse_inbound(form: Mapping[str, str], raw: str | None = None) -> Inbound:
    """An inbound SMS/WhatsApp webhook (``From``, ``Body``, ``MessageSid``)."""
    text = form.get("Body") or ""
    kind = InboundKind.UNSUBSCRIBE if keyword_of(text) in OPT_OUT_KEYWORDS else InboundKind.MESSAGE
    return Inbound(
        sender=_number(form.get("From") or ""),
        text=text,
        received_at=datetime.now(UTC),
        provider_message_id=form.get("MessageSid") or form.get("SmsMessageSid") or None,
        kind=kind,
        raw=raw,
    )


def parse_status(form: Mapping[str, str]) -> Receipt | None:
    """A status callback about one of our messages; None for statuses relay does not
    record (queued, sending, accepted)."""
    status = STATUS_MAP.get((form.get("MessageStatus") or form.get("SmsStatus") or "").lower())
    sid = form.get("MessageSid") or form.get("SmsSid")
    if status is None or not sid:
        return None
    code = _int(form.get("ErrorCode"))
    error = None
    if code:
        error = f"{code}: {ERROR_TEXT.get(code) or form.get('ErrorMessage') or 'see Twilio docs'}"
    return Receipt(
        provider_message_id=sid,
        status=status,
        error=error,
        permanent=code in PERMANENT_CODES,
        opted_out=code == 21610,
        at=None,  # a callback states no time of its own: recorded at arrival, never "later"
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _is_ours(item: Mapping[str, Any], text: str, since: datetime, taken: frozenset[str]) -> bool:
    """A listed message is the one handed over: outbound, its text, not older than
    ``since``, and not one relay recorded for another message (``taken``)."""
    outbound = str(item.get("direction") or "").startswith("outbound")
    if not outbound or str(item.get("body") or "") != text or item.get("sid") in taken:
        return False
    created = item.get("date_created") or item.get("date_sent")
    if not created:
        return True  # listed by its send date, which is on or after since's day
    return parsedate_to_datetime(str(created)).astimezone(UTC) >= since


def _listed_inbound(item: Mapping[str, Any], kind: str) -> tuple[Inbound, datetime] | None:
    if not str(item.get("direction") or "").startswith("inbound"):
        return None
    sent = item.get("date_sent") or item.get("date_created")
    if not sent:
        return None
    when = parsedate_to_datetime(str(sent)).astimezone(UTC)
    form = {
        "From": str(item.get("from") or ""),
        "Body": str(item.get("body") or ""),
        "MessageSid": str(item.get("sid") or ""),
    }
    return replace(parse_inbound(form, raw=json.dumps(item)), received_at=when), when
