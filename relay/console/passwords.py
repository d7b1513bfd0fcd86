"""``python -m relay.console.passwords``: print the hash of a console password, to
put in the variable ``console.operator_token_env`` or ``readonly_token_env`` names
(the server then never holds the password itself)."""

from __future__ import annotations

import getpass
import sys

from relay.console.auth import hash_password


def main() -> int:
    password = sys.stdin.readline().rstrip("\n") if not sys.stdin.isatty() else getpass.getpass()
    if len(password) < 12:
        print("relay: error: a console password needs at least 12 characters", file=sys.stderr)
        return 2
    print(hash_password(password))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
