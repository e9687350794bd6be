"""Validation of the test endpoint variables (``ARTIFACTIZE_*_BASE_URL``).

A test endpoint exists so a fake provider on this machine can stand in for the real one. It
receives the API key, so it must be loopback: ``localhost``, an address in 127.0.0.0/8 or
``[::1]``, over http or https, with no credentials, query or fragment. Anything else is
refused before a connection is made, and the error names the variable and the rule. The
value itself is not echoed: it may hold credentials.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

from ports.model import BackendUnavailable

ALLOWED_SCHEMES = ("http", "https")
LOOPBACK_NAMES = ("localhost",)
LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")
LOOPBACK_V6 = ipaddress.IPv6Address("::1")
LOOPBACK_RULE = "an http(s) URL on localhost, 127.0.0.0/8 or [::1]"


def _refuse(variable: str, problem: str) -> BackendUnavailable:
    return BackendUnavailable(f"{variable} must be {LOOPBACK_RULE}; {problem}.")


def is_loopback_host(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in LOOPBACK_V4
    return address == LOOPBACK_V6 and address.scope_id is None


def _split(variable: str, value: str) -> SplitResult:
    # urlsplit silently drops tabs and newlines; refuse them (and spaces, backslashes) first.
    if any(ord(char) <= 0x20 or ord(char) == 0x7F or char == "\\" for char in value):
        raise _refuse(variable, "it contains whitespace, control characters or a backslash")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        raise _refuse(variable, "it is not a valid URL") from None
    return parts


def validate_test_endpoint(variable: str, value: str) -> str | None:
    """The normalized base URL (no trailing slash), or None when ``value`` is empty (unset).

    Raises ``BackendUnavailable`` naming ``variable`` and the rule it breaks."""
    if value == "":
        return None
    parts = _split(variable, value)
    if parts.scheme not in ALLOWED_SCHEMES:
        raise _refuse(variable, "its scheme is not http or https")
    if "@" in parts.netloc:
        raise _refuse(variable, "it must not contain credentials (user:password@)")
    if "?" in value:
        raise _refuse(variable, "it must not contain a query (?…)")
    if "#" in value:
        raise _refuse(variable, "it must not contain a fragment (#…)")
    host = parts.hostname or ""
    if not host:
        raise _refuse(variable, "it has no host")
    if not is_loopback_host(host):
        raise _refuse(variable, f"host {host!r} is not loopback")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
