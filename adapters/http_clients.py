"""The one way we build an httpx2 client: verifying TLS, no redirects, no environment.

``trust_env=False`` ignores proxy variables (so ``HTTP_PROXY`` cannot reroute a request or
see its credentials) and ``SSL_CERT_FILE``-style overrides; redirects are never followed, so
a header never travels to a host we did not name. Only the timeouts differ between uses.
"""

from __future__ import annotations

import functools
import ssl

import httpx2


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: loading the trust store takes tens of
    milliseconds, and a context is safe to share between clients."""
    return httpx2.create_ssl_context(trust_env=False)


def new_http_client(
    *, total: float | None, connect: float, proxy: str | None = None
) -> httpx2.AsyncClient:
    """A client with ``total`` as its default timeout (None: none) and ``connect`` seconds to
    connect, through ``proxy`` when one is named (chosen by the caller, never read from the
    environment by httpx2); the caller closes it."""
    return httpx2.AsyncClient(
        verify=_tls_context(),
        timeout=httpx2.Timeout(total, connect=connect),
        follow_redirects=False,
        trust_env=False,
        proxy=proxy,
    )
