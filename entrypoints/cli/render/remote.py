"""``artifactize remote status`` as a view (its ``--json`` document) and text."""

from __future__ import annotations

from typing import Any

from artifactize.entrypoints.lease_json import CLIENT_ORDER, lease_json
from artifactize.ports.review_store import Principal, RemoteFailure, RemoteLease, RemoteSettings


def unused_status(off_reason: str | None, not_configured: str) -> tuple[dict[str, Any], str]:
    """No store in use: switched off (``off_reason``) or never configured."""
    view: dict[str, Any] = {
        "configured": False,
        "off": off_reason is not None,
        "url": None,
        "share": None,
        "tokenSource": None,
        "reachable": False,
        "accepted": False,
        "principal": None,
        "scopes": [],
        "leases": None,
        "error": None,
    }
    return view, f"Remote review store: not in use ({off_reason or not_configured})"


def store_status(
    settings: RemoteSettings,
    principal: Principal | None,
    leases: list[RemoteLease] | None,
    failure: RemoteFailure | None,
) -> tuple[dict[str, Any], str]:
    """What the store answered: who the token belongs to, the leases, or why it failed."""
    reachable = principal is not None or (failure is not None and failure.status is not None)
    view: dict[str, Any] = {
        "configured": True,
        "off": False,
        "url": settings.url,
        "share": settings.share,
        "tokenSource": settings.token_source,
        "reachable": reachable,
        "accepted": principal is not None,
        "principal": principal.name if principal else None,
        "scopes": list(principal.scopes) if principal else [],
        "leases": None if leases is None else [lease_view(lease) for lease in leases],
        "error": failure.message if failure else None,
    }
    lines = [
        f"URL: {settings.url}",
        f"Share: {settings.share}",
        f"Token: {settings.token_source}",
        f"Reachable: {'yes' if reachable else 'no'}",
    ]
    if principal is not None:
        lines.append(f"Principal: {principal.name}")
        lines.append(f"Scopes: {', '.join(principal.scopes) or 'none'}")
    if leases is not None:
        lines.append(f"Leases held: {len(leases)}")
        lines.extend(
            f"  {lease.key} by {lease.principal} until {lease.expires_at}" for lease in leases
        )
    if failure is not None:
        lines.append(f"Error: {failure.message}")
    return view, "\n".join(lines)


def lease_view(lease: RemoteLease) -> dict[str, Any]:
    return lease_json(lease, CLIENT_ORDER)
