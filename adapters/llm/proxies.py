"""Which proxy a model endpoint goes through: ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``
and ``NO_PROXY`` (either case), as curl and the SDKs read them, from the environment we are
given rather than ``os.environ``.

A loopback endpoint never goes through a proxy: it is on this machine, and a proxy would see
its traffic (plain http, key included). A remote endpoint is https, so a proxy only sees the
``CONNECT host:port`` line; the key travels inside TLS, never in a URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from artifactize.adapters.llm.endpoints import is_loopback_host
from artifactize.ports.model import BackendUnavailable

PROXY_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}


def _variable(environment: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(the variable's name as set, its value) for ``name`` in lower case first, as curl."""
    for variant in (name.lower(), name.upper()):
        value = environment.get(variant, "").strip()
        if value:
            return variant, value
    return None


def _bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` (comma-separated hosts, domains with or without a leading dot,
    ``host:port``, or ``*``) names ``host``."""
    host = host.lower().strip("[]")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and not entry_port.isdigit():
            name, entry_port = entry, ""
        if entry_port and port is not None and int(entry_port) != port:
            continue
        name = name.strip("[]").lstrip("*").lstrip(".")
        if host == name or host.endswith("." + name):
            return True
    return False


def proxy_for(url: str, environment: Mapping[str, str]) -> str | None:
    """The proxy URL for ``url``, or None for a direct connection.

    Raises ``BackendUnavailable`` naming the variable when its value is not a proxy URL."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if is_loopback_host(host):
        return None
    no_proxy = _variable(environment, "NO_PROXY")
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    if no_proxy is not None and _bypassed(host, port, no_proxy[1]):
        return None
    names = ("HTTPS_PROXY", "ALL_PROXY") if parts.scheme == "https" else ("HTTP_PROXY", "ALL_PROXY")
    for name in names:
        found = _variable(environment, name)
        if found is None:
            continue
        variable, value = found
        if "://" not in value:
            value = "http://" + value  # curl's reading of a bare host:port
        try:
            proxy = urlsplit(value)
            proxy.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            proxy = None
        if proxy is None or proxy.scheme not in PROXY_SCHEMES or not proxy.hostname:
            raise BackendUnavailable(
                f"{variable} is not a proxy URL (scheme://host:port with scheme "
                f"{', '.join(PROXY_SCHEMES)}); correct or unset it."
            )
        return value
    return None


def without_credentials(proxy: str) -> str:
    """The proxy URL as it may be shown: ``user:password@`` removed."""
    parts = urlsplit(proxy)
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc).geturl()
