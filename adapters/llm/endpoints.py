"""Validation of the test endpoint variables (``ARTIFACTIZE_*_BASE_URL``).

A test endpoint exists so a fake provider on this machine can stand in for the real one. It
receives the API key, so it must be loopback: ``localhost``, an address in 127.0.0.0/8 or
``[::1]``, over http or https, with no credentials, query or fragment. Anything else is
refused before a connection is made, and the error names the variable and the rule. The
value itself is not echoed: it may hold credentials.

``split_http_url`` and ``is_loopback_host`` also serve the remote store's URL rules
(``remote_urls``), which word their errors their own way.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
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


def split_http_url(
    value: str,
    refuse: Callable[[str], Exception],
    *,
    scheme_problem: str,
    userinfo_problem: str,
) -> tuple[SplitResult, int | None, str]:
    """(the parts, the port, the lowercase host) of an http(s) URL with a host and no user
    info, query or fragment.

    The first rule broken raises ``refuse(problem)``; ``scheme_problem`` and
    ``userinfo_problem`` are the words for a scheme other than http(s) and for user info."""
    # urlsplit silently drops tabs and newlines; refuse them (and spaces, backslashes) first.
    if any(ord(char) <= 0x20 or ord(char) == 0x7F or char == "\\" for char in value):
        raise refuse("it contains whitespace, control characters or a backslash")
    try:
        parts = urlsplit(value)  # lowercases the scheme (and ``hostname``)
        port = parts.port  # raises ValueError for a port out of range or not a number
    except ValueError:
        raise refuse("it is not a valid URL") from None
    if parts.scheme not in ALLOWED_SCHEMES:
        raise refuse(scheme_problem)
    if "@" in parts.netloc:
        raise refuse(userinfo_problem)
    if "?" in value:
        raise refuse("it must not contain a query (?…)")
    if "#" in value:
        raise refuse("it must not contain a fragment (#…)")
    host = parts.hostname or ""
    if not host:
        raise refuse("it has no host")
    return parts, port, host


def validate_test_endpoint(variable: str, value: str) -> str | None:
    """The normalized base URL (no trailing slash), or None when ``value`` is empty (unset).

    Raises ``BackendUnavailable`` naming ``variable`` and the rule it breaks."""
    if value == "":
        return None
    parts, _, host = split_http_url(
        value,
        lambda problem: _refuse(variable, problem),
        scheme_problem="its scheme is not http or https",
        userinfo_problem="it must not contain credentials (user:password@)",
    )
    if not is_loopback_host(host):
        raise _refuse(variable, f"host {host!r} is not loopback")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
