"""Validation of model endpoints: a profile's ``base_url`` and ``ARTIFACTIZE_*_BASE_URL``.

An endpoint receives the API key, so plain http is allowed only on a loopback host
(``localhost``, 127.0.0.0/8, ``[::1]``: a local Ollama, vLLM or our fake provider); any
other host needs https. Credentials, query and fragment are refused (keys travel in headers,
from their own variables). Everything is checked before a connection is made, and the error
names the variable or key and the rule. The value itself is not echoed: it may hold
credentials.

``split_http_url`` and ``is_loopback_host`` also serve the remote store's URL rules
(``remote_urls``), which word their errors their own way.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

from artifactize.ports.model import BackendUnavailable

ALLOWED_SCHEMES = ("http", "https")
LOOPBACK_NAMES = ("localhost",)
LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")
LOOPBACK_V6 = ipaddress.IPv6Address("::1")
ENDPOINT_RULE = (
    "an https:// URL, or an http:// URL on localhost, 127.0.0.0/8 or [::1], "
    "without credentials, query or fragment"
)


def _refuse(name: str, problem: str) -> BackendUnavailable:
    return BackendUnavailable(f"{name} must be {ENDPOINT_RULE}; {problem}. Correct or unset it.")


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


def validate_base_url(name: str, value: str) -> str:
    """The normalized base URL (no trailing slash) of ``value``, named ``name`` in errors.

    Raises ``BackendUnavailable`` naming ``name``, the rule and the fix. The value itself is
    not echoed: it may hold credentials."""
    parts, _, host = split_http_url(
        value,
        lambda problem: _refuse(name, problem),
        scheme_problem="its scheme is not https (or http on a loopback host)",
        userinfo_problem="it must not contain credentials (user:password@); "
        "keys travel in headers, from their own variables",
    )
    if parts.scheme == "http" and not is_loopback_host(host):
        raise _refuse(name, f"host {host!r} is not loopback, so it needs https://")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def validate_test_endpoint(variable: str, value: str) -> str | None:
    """``validate_base_url`` of a variable's value, or None when it is empty (unset)."""
    if value == "":
        return None
    return validate_base_url(variable, value)
