"""The rules for a remote review store's URL, share mode and token.

A store URL is ``https://`` anywhere, or ``http://`` only on this machine (``localhost``,
127.0.0.0/8, ``[::1]``): a token sent over plain HTTP to another host could be read on the
way. No user info, query or fragment. The path is normalized to end with ``/`` so routes
(``v1/whoami``) resolve below it. A stored token is bound to the *origin* (scheme, host,
port) it was issued for.

A token is 1-4096 printable ASCII characters without spaces. Errors name the source of the
value and the rule; a token is never echoed, and a URL is not echoed either (it may carry
credentials, which is one of the things refused).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from artifactize.adapters.llm.endpoints import is_loopback_host, split_http_url
from artifactize.ports.review_store import SHARE_MODES, TOKEN_MAX_CHARS, RemoteConfigError

TOKEN_RULE = f"1-{TOKEN_MAX_CHARS} printable ASCII characters without spaces"
URL_RULE = "an https:// URL, or http:// on localhost, 127.0.0.0/8 or [::1]"
DEFAULT_PORTS = {"http": 80, "https": 443}
_FIRST_PRINTABLE = 0x21
_LAST_PRINTABLE = 0x7E


def _refuse(source: str, problem: str) -> RemoteConfigError:
    return RemoteConfigError(f"{source} must be {URL_RULE}; {problem}.")


def normalize_store_url(value: str, source: str) -> str:
    """``scheme://host[:port]/path/`` with a lowercase scheme and host, default ports dropped.

    ``source`` names where the value came from (a variable, a file field, an argument).
    Raises ``RemoteConfigError`` naming ``source`` and the rule that failed.
    """
    parts, port, host = split_http_url(
        value,
        lambda problem: _refuse(source, problem),
        scheme_problem="its scheme is not https or http",
        userinfo_problem="it must not contain user info (user:password@)",
    )
    scheme = parts.scheme
    if scheme == "http" and not is_loopback_host(host):
        raise _refuse(source, "plain http is allowed only on this machine; use https")
    shown_host = f"[{host}]" if ":" in host else host
    netloc = shown_host if port in (None, DEFAULT_PORTS[scheme]) else f"{shown_host}:{port}"
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"{scheme}://{netloc}{path}"


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL normalized by ``normalize_store_url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def check_token(token: str, source: str) -> str:
    """``token`` when it is 1-4096 printable ASCII without spaces; the error never shows it."""
    if not token:
        raise RemoteConfigError(f"{source} is empty; a token is {TOKEN_RULE}.")
    if len(token) > TOKEN_MAX_CHARS:
        raise RemoteConfigError(f"{source} has {len(token)} characters; a token is {TOKEN_RULE}.")
    if not all(_FIRST_PRINTABLE <= ord(char) <= _LAST_PRINTABLE for char in token):
        raise RemoteConfigError(
            f"{source} contains a space, a control or a non-ASCII character; "
            f"a token is {TOKEN_RULE}."
        )
    return token


def check_share(value: str, source: str) -> str:
    if value not in SHARE_MODES:
        raise RemoteConfigError(f"{source} must be {' or '.join(SHARE_MODES)}.")
    return value
