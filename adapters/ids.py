"""``IdSource`` from the operating system's cryptographically strong randomness."""

from __future__ import annotations

import secrets


class SecretIds:
    def choose(self, alphabet: str, count: int) -> str:
        return "".join(secrets.choice(alphabet) for _ in range(count))
