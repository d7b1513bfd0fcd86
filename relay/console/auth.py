"""Who may use the console: credentials named by environment variable, a signed
session cookie, a CSRF token per session.

A credential is the value of the variable ``console.operator_token_env`` or
``console.readonly_token_env`` names: either a token (kept in memory only as its
SHA-256) or a password hash made by ``python -m relay.console.passwords``
(``pbkdf2_sha256$ITERATIONS$SALT$HASH``), so the server never holds the password.

The session is a cookie ``relay_console`` holding the role, a CSRF token and an
expiry, signed with HMAC-SHA256 by the key ``console.session_secret_env`` names
(a random per-process key if none: sessions then end when the server restarts,
and several servers behind one address must share a key). Nothing about a
session lives in the server, so it works the same with several servers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from relay.core.errors import ConfigError
from relay.settings import ConsoleSettings

OPERATOR = "operator"
READONLY = "readonly"
COOKIE = "relay_console"
#: The sign-in form's own CSRF cookie (double submit: there is no session yet).
LOGIN_COOKIE = "relay_console_login"
HASH_PREFIX = "pbkdf2_sha256"
HASH_ITERATIONS = 600_000


def hash_password(password: str, *, iterations: int = HASH_ITERATIONS) -> str:
    """``pbkdf2_sha256$ITERATIONS$SALT$HASH`` for ``password`` (salt and hash in hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{HASH_PREFIX}${iterations}${salt.hex()}${digest.hex()}"


@dataclass(frozen=True)
class Credential:
    role: str
    #: SHA-256 of a token, or the parts of a password hash.
    token_digest: bytes | None = None
    iterations: int = 0
    salt: bytes = b""
    password_digest: bytes = b""

    @classmethod
    def parse(cls, role: str, value: str, variable: str) -> Credential:
        if not value.startswith(HASH_PREFIX + "$"):
            if len(value) < 12:
                raise ConfigError(f"{variable} holds a console token under 12 characters")
            return cls(role, token_digest=hashlib.sha256(value.encode()).digest())
        try:
            _, iterations, salt, digest = value.split("$")
            return cls(
                role,
                iterations=int(iterations),
                salt=bytes.fromhex(salt),
                password_digest=bytes.fromhex(digest),
            )
        except ValueError:
            raise ConfigError(f"{variable} holds a malformed {HASH_PREFIX} hash") from None

    def matches(self, given: str) -> bool:
        if self.token_digest is not None:
            return hmac.compare_digest(self.token_digest, hashlib.sha256(given.encode()).digest())
        digest = hashlib.pbkdf2_hmac("sha256", given.encode(), self.salt, self.iterations)
        return hmac.compare_digest(self.password_digest, digest)


@dataclass(frozen=True)
class Session:
    role: str
    csrf: str
    expires: float

    @property
    def can_act(self) -> bool:
        return self.role == OPERATOR


class Gate:
    """Checks credentials and makes and reads session cookies."""

    def __init__(self, credentials: list[Credential], key: bytes, max_age: float) -> None:
        self.credentials = credentials
        self.key = key
        self.max_age = max_age

    @classmethod
    def from_settings(cls, settings: ConsoleSettings) -> Gate:
        """Refused (a ConfigError) unless at least one credential is set: a console
        nobody can sign in to, or anybody could, is a configuration mistake."""
        credentials = []
        for role, variable in ((OPERATOR, settings.operator_token_env),
                               (READONLY, settings.readonly_token_env)):  # fmt: skip
            value = os.environ.get(variable) if variable else None
            if variable and not value:
                raise ConfigError(f"console: {variable} is not set")
            if value:
                credentials.append(Credential.parse(role, value, variable))
        if not credentials:
            raise ConfigError("console: set operator_token_env or readonly_token_env in [console]")
        secret_var = settings.session_secret_env
        secret = os.environ.get(secret_var) if secret_var else None
        if secret_var and not secret:
            raise ConfigError(f"console: {secret_var} is not set")
        key = hashlib.sha256(secret.encode()).digest() if secret else secrets.token_bytes(32)
        return cls(credentials, key, settings.session_max_age.total_seconds())

    def sign_in(self, given: str) -> str | None:
        """The role ``given`` grants, or None. Every credential is checked, so the
        time taken does not say which one nearly matched."""
        roles = [c.role for c in self.credentials if c.matches(given)]
        return roles[0] if roles else None

    def cookie_for(self, role: str) -> str:
        body = {"role": role, "csrf": secrets.token_urlsafe(24), "exp": time.time() + self.max_age}
        payload = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
        return f"{payload}.{self._sign(payload)}"

    def session(self, cookie: str | None) -> Session | None:
        """The session a cookie holds, if its signature is ours and it has not expired."""
        if not cookie or "." not in cookie:
            return None
        payload, signature = cookie.rsplit(".", 1)
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            found = Session(str(body["role"]), str(body["csrf"]), float(body["exp"]))
        except (ValueError, KeyError, TypeError):
            return None
        if found.expires < time.time() or found.role not in (OPERATOR, READONLY):
            return None
        return found

    def _sign(self, payload: str) -> str:
        mac = hmac.new(self.key, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def same_token(expected: str | None, given: str | None) -> bool:
    return bool(expected and given) and hmac.compare_digest(str(expected), str(given))


class Throttle:
    """Failed sign-ins per client address: after ``limit`` within ``window``
    seconds, that address is refused (429) until the oldest failure ages out.
    Per process and in memory: it slows guessing, it is not an account lock."""

    def __init__(
        self, limit: int = 10, window: float = 900.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: dict[str, list[float]] = {}

    def _recent(self, client: str) -> list[float]:
        cutoff = self.clock() - self.window
        kept = [t for t in self._failures.get(client, []) if t > cutoff]
        if kept:
            self._failures[client] = kept
        else:
            self._failures.pop(client, None)
        return kept

    def blocked(self, client: str) -> bool:
        return len(self._recent(client)) >= self.limit

    def failed(self, client: str) -> None:
        self._recent(client)
        self._failures.setdefault(client, []).append(self.clock())
