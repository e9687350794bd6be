"""Review store bearer tokens: names, scopes, the secret itself and the hash kept of it.

A token is ``azt_`` + base64url (no padding) of TOKEN_RANDOM_BYTES random bytes. Only its
SHA-256 (lowercase hex) is stored, so a copy of the store file grants nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Sequence

from artifactize.ports.store_server_storage import TOKEN_SCOPES, TokenRequestError

TOKEN_PREFIX = "azt_"
TOKEN_RANDOM_BYTES = 32
TOKEN_NAME_MAX_CHARS = 64
_TOKEN_NAME = re.compile(rf"[A-Za-z0-9._-]{{1,{TOKEN_NAME_MAX_CHARS}}}")


def new_token() -> str:
    raw = secrets.token_bytes(TOKEN_RANDOM_BYTES)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def token_hash(token: str) -> str:
    """SHA-256 of the token's UTF-8 bytes, lowercase hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def same_hash(left: str, right: str) -> bool:
    """Constant-time comparison, so timing tells nothing about a stored hash."""
    return secrets.compare_digest(left.encode("ascii"), right.encode("ascii"))


def check_token_name(name: str) -> str:
    if _TOKEN_NAME.fullmatch(name) is None:
        raise TokenRequestError(
            f"Invalid token name {name!r}: use 1 to {TOKEN_NAME_MAX_CHARS} characters "
            "of A-Z, a-z, 0-9, '.', '_' and '-'."
        )
    return name


def check_scopes(scopes: Sequence[str]) -> tuple[str, ...]:
    """The scopes in canonical order, each once; at least one, each known."""
    allowed = ", ".join(TOKEN_SCOPES)
    for scope in scopes:
        if scope not in TOKEN_SCOPES:
            raise TokenRequestError(f"Unknown scope {scope!r}: scopes are {allowed}.")
    chosen = tuple(scope for scope in TOKEN_SCOPES if scope in scopes)
    if not chosen:
        raise TokenRequestError(f"Give at least one scope: {allowed}.")
    return chosen
