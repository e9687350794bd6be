"""``profile.base_url`` of an Agent eval: the shape ``config check`` can see without I/O.

An endpoint receives the API key, so plain http is allowed only on a loopback host
(``localhost``, 127.0.0.0/8, ``[::1]``); anything else needs https. Credentials, query and
fragment are refused (keys travel in headers, from their own variables). The model backend
adapter applies the same rules again, fully, before it connects (``adapters/llm/endpoints``);
this check only makes ``config check`` fail early, naming the key and the fix.
"""

from __future__ import annotations

import ipaddress

SCHEMES = ("https://", "http://")
LOOPBACK_NAMES = ("localhost",)
FIX = (
    "use an https:// URL, or http:// on localhost, 127.0.0.0/8 or [::1], "
    "without credentials, query or fragment"
)


def _host(authority: str) -> str:
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0] if ":" in authority else authority


def _loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_url_problem(value: str) -> str | None:
    """Why ``value`` cannot be a model endpoint (the message names the fix), else None."""
    if any(ord(char) <= 0x20 or ord(char) == 0x7F or char == "\\" for char in value):
        return f"must not contain whitespace, control characters or a backslash; {FIX}"
    lowered = value.lower()
    scheme = next((s for s in SCHEMES if lowered.startswith(s)), None)
    if scheme is None:
        return f"its scheme is not https (or http on a loopback host); {FIX}"
    authority = value[len(scheme) :].partition("/")[0]
    if "@" in authority:
        return f"must not contain credentials (user:password@); {FIX}"
    if "?" in value:
        return f"must not contain a query (?…); {FIX}"
    if "#" in value:
        return f"must not contain a fragment (#…); {FIX}"
    host = _host(authority)
    if not host:
        return f"has no host; {FIX}"
    if scheme == "http://" and not _loopback(host):
        return f"host {host!r} is not loopback, so it needs https://; {FIX}"
    return None
