"""``relay doctor --email``: will mail providers accept what each email channel sends?

Gmail and Yahoo (since 2024) and Microsoft (since 2025) refuse or junk bulk mail
that fails these, so each email channel's sending domain is checked in DNS:

- SPF: one ``v=spf1`` record at the envelope sender's domain (the VERP
  ``bounce_address`` if set, else the From address), not ending in ``+all``;
- DKIM: a key at ``<dkim_selector>._domainkey.<From domain>`` (the channel's
  ``dkim_selector`` names the selector the provider signs with);
- DMARC: a ``v=DMARC1`` record at ``_dmarc.<From domain>`` (or its organisational
  domain), and alignment: DKIM's domain is the From domain, or SPF's is (the
  same, or under one organisational domain unless the record says ``aspf=s``);
- one-click unsubscribe: ``unsubscribe_url`` is https, so every message carries
  ``List-Unsubscribe-Post`` (RFC 8058) and ``relay serve`` answers the POST.

The lookups go through a :data:`Resolver` that tests replace; the default uses
dnspython, imported only by this command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.core.errors import ConfigError

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

#: The TXT strings at a name; [] when it has none (or does not exist).
Resolver = Callable[[str], list[str]]


@dataclass(frozen=True)
class MailCheck:
    channel: str
    check: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"channel": self.channel, "check": self.check, "ok": self.ok, "detail": self.detail}


def dns_resolver(timeout: float = 5.0) -> Resolver:
    """TXT lookups through dnspython (``pip install dnspython``)."""
    try:
        import dns.exception
        import dns.resolver
    except ImportError:
        raise ConfigError("relay doctor --email needs dnspython: pip install dnspython") from None

    def txt(name: str) -> list[str]:
        try:
            answer = dns.resolver.resolve(name, "TXT", lifetime=timeout)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except dns.exception.DNSException as exc:
            raise ConfigError(f"DNS lookup of {name} failed: {exc}") from None
        return [b"".join(r.strings).decode("utf-8", "replace") for r in answer]

    return txt


def org_domain(domain: str) -> str:
    """The registrable domain, approximately: the last two labels (three under a
    two-letter country's second level such as ``co.uk``)."""
    labels = domain.lower().rstrip(".").split(".")
    if len(labels) > 2 and len(labels[-1]) == 2 and len(labels[-2]) <= 3:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def check_email(runtime: Runtime, resolver: Resolver | None = None) -> list[MailCheck]:
    """Every email channel's SPF, DKIM, DMARC alignment and one-click unsubscribe
    (``relay doctor --email``): ``relay.api.check_email(relay)``; ``resolver``: TXT
    lookups (default: dnspython)."""
    from relay.engine.runtime import channels_of_type

    config = runtime.config
    names = [n for n in channels_of_type(config, "email") if config.get(f"channels.{n}.from")]
    if not names:
        raise ConfigError('no email channel is configured ([channels.NAME] type = "email")')
    lookup = resolver or dns_resolver()
    checks: list[MailCheck] = []
    for name in names:
        checks += check_channel(name, dict(config.section(f"channels.{name}")), lookup)
    return checks


def check_channel(name: str, settings: dict[str, Any], txt: Resolver) -> list[MailCheck]:
    sender = str(settings["from"])
    domain = sender.rpartition("@")[2].lower()
    bounce = str(settings.get("bounce_address") or sender)
    envelope = bounce.rpartition("@")[2].lower()
    dmarc = _dmarc(domain, txt)
    spf = _spf(envelope, txt)
    dkim = _dkim(domain, str(settings.get("dkim_selector") or ""), txt)
    checks = [
        MailCheck(name, "spf", *spf),
        MailCheck(name, "dkim", *dkim),
        MailCheck(name, "dmarc", *dmarc[:2]),
        MailCheck(name, "alignment", *_alignment(domain, envelope, spf[0], dkim[0], dmarc[2])),
        MailCheck(name, "unsubscribe", *_unsubscribe(settings)),
    ]
    return checks


def _spf(domain: str, txt: Resolver) -> tuple[bool, str]:
    records = [r for r in txt(domain) if r.lower().startswith("v=spf1")]
    if not records:
        return False, f"no SPF record at {domain}"
    if len(records) > 1:
        return False, f"{len(records)} SPF records at {domain}: receivers treat that as an error"
    if records[0].rstrip().lower().endswith("+all"):
        return False, f"SPF at {domain} ends in +all: it vouches for every server"
    return True, f"{domain}: {records[0]}"


def _dkim(domain: str, selector: str, txt: Resolver) -> tuple[bool, str]:
    if not selector:
        return False, "set dkim_selector (the selector your mail provider signs with) to check DKIM"
    name = f"{selector}._domainkey.{domain}"
    records = [r for r in txt(name) if "p=" in r.replace(" ", "")]
    if not records:
        return False, f"no DKIM key at {name}"
    tags = _tags(records[0])
    if not tags.get("p"):
        return False, f"the DKIM key at {name} is revoked (empty p=)"
    return True, f"key at {name}"


def _dmarc(domain: str, txt: Resolver) -> tuple[bool, str, dict[str, str]]:
    for name in dict.fromkeys((f"_dmarc.{domain}", f"_dmarc.{org_domain(domain)}")):
        records = [r for r in txt(name) if r.replace(" ", "").upper().startswith("V=DMARC1")]
        if records:
            tags = _tags(records[0])
            policy = tags.get("p", "").lower()
            if policy not in ("none", "quarantine", "reject"):
                return False, f"DMARC at {name} has no valid p= (none, quarantine, reject)", tags
            note = " (monitoring only)" if policy == "none" else ""
            return True, f"{name}: p={policy}{note}", tags
    return False, f"no DMARC record at _dmarc.{domain}", {}


def _alignment(
    domain: str, envelope: str, spf_ok: bool, dkim_ok: bool, tags: dict[str, str]
) -> tuple[bool, str]:
    if dkim_ok:
        return True, f"DKIM signs as {domain}, the From domain"
    strict = tags.get("aspf", "r") == "s"
    same = envelope == domain if strict else org_domain(envelope) == org_domain(domain)
    if spf_ok and same:
        return True, f"SPF passes for {envelope}, aligned with {domain}"
    if spf_ok:
        mode = "strict" if strict else "relaxed"
        return False, f"SPF's domain {envelope} is not aligned ({mode}) with From {domain}, no DKIM"
    return False, f"neither DKIM nor SPF can align with From {domain}"


def _unsubscribe(settings: dict[str, Any]) -> tuple[bool, str]:
    url = str(settings.get("unsubscribe_url") or "")
    if url.lower().startswith("https://"):
        return True, f"one-click (RFC 8058) to {url.rstrip('/')}/unsubscribe/<token>"
    if url:
        return False, f"unsubscribe_url {url} is not https: one-click (RFC 8058) needs https"
    return False, "set unsubscribe_url (https, served by relay serve) for one-click unsubscribe"


def _tags(record: str) -> dict[str, str]:
    pairs = (part.split("=", 1) for part in record.split(";") if "=" in part)
    return {k.strip().lower(): v.strip() for k, v in pairs}
