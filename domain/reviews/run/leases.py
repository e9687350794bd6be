"""Review leases inside a Run: one machine reviews a key, the others wait for its verdict.

Before a keyed Agent or runtime review claims its key locally, ``acquire`` asks the team
store (``RemoteSync.take_lease``) for the key's lease, with the execution's ID as holder:

* granted: the key is looked up once more, unthrottled (the previous holder publishes its
  verdict before it releases the lease, so a verdict that beat the lease is found, not paid
  for again; a store answers that lookup with the grant, an older one is asked), then the
  local claim goes on as always; the lease is renewed while the review runs
  (``renewing``) and released once its verdict is published, on every path (by the store
  as it takes the verdict, or by an explicit release);
* held by another machine: the request waits (``WAITING_FOR_LEASE``), polling the store
  every LEASE_POLL_SECONDS; the verdict arrives as a mirrored record and is reused as a
  join, or the lease lapses (its holder died) and this machine takes over;
* no lease (no store, no ``publish`` scope, an older store, or a store that does not
  answer: fail open): the review runs here, as without leases.

A waiter waits as long as the lease is live: its holder renews it only while its own review
runs, within that review's limits. Human reviews take no lease.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio

from artifactize.domain.declarations.model import HumanProfile, Profile
from artifactize.domain.reviews.remote.leases import renew_interval
from artifactize.domain.reviews.remote.sync import RemoteSync
from artifactize.domain.reviews.run.context import RunContext
from artifactize.kernel.document_codec import request_changed
from artifactize.ports.documents import Request
from artifactize.ports.review_store import RemoteLease

LEASE_POLL_SECONDS = 1.0
WAITING_FOR_LEASE = (
    "Waiting for {principal}'s review of this reuse key (team store lease until {expires})."
)

_T = TypeVar("_T")


def applies(ctx: RunContext, profile: Profile, key: str | None) -> RemoteSync | None:
    """The store to take a lease from for this review, or None when leases do not apply."""
    remote = ctx.ports.remote
    if remote is None or key is None or ctx.options.force or isinstance(profile, HumanProfile):
        return None
    return remote


async def acquire(
    ctx: RunContext, remote: RemoteSync, request: Request, holder: str, waiting: bool
) -> tuple[RemoteLease | None, bool]:
    """(the lease granted to ``holder`` or None, whether another machine holds it). A held
    lease marks the request as waiting (saved once: ``waiting`` says it already is)."""
    key = request.key
    if key is None:  # an unkeyed request is never shared, so never leased
        return None, False
    lease = await remote.take_lease(key, holder)
    if lease is None:
        return None, False
    if not lease.granted:
        if not waiting:
            reason = WAITING_FOR_LEASE.format(principal=lease.principal, expires=lease.expires_at)
            ctx.save(request_changed(request, blocked_reason=reason))
        return None, True
    clock = ctx.ports.review.clock
    await remote.mirror(
        [key], ctx.ports.state, clock.monotonic(), settled_at=ctx.now(), answered=lease.latest
    )
    return lease, False


def verdict_arrived(ctx: RunContext, request: Request) -> bool:
    """Whether the key now has a verdict to reuse (mirrored from the store while its lease
    is still held: the holder published but its release did not reach the store)."""
    key = request.key
    return key is not None and ctx.ports.state.latest_record(key, touch=False) is not None


async def renewing(
    ctx: RunContext, remote: RemoteSync, lease: RemoteLease | None, work: Awaitable[_T]
) -> _T:
    """Await ``work`` while renewing ``lease`` (if any) every ``renew_interval`` seconds."""
    if lease is None:
        return await work
    sleep = ctx.ports.sleep

    async def renew() -> None:
        while True:
            await sleep(renew_interval(lease.lease_seconds))
            if not await remote.renew_lease(lease):
                return

    result: list[_T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        group.start_soon(renew)
        try:
            result.append(await work)
        except Exception as exc:  # re-raised as is, not inside an exception group
            failure.append(exc)
        finally:
            group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return result[0]


async def release(remote: RemoteSync | None, lease: RemoteLease | None) -> None:
    """Give ``lease`` back (shielded: it runs on cancellation too)."""
    if remote is None or lease is None:
        return
    with anyio.CancelScope(shield=True):
        await remote.release_lease(lease)
