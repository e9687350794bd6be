"""The machine-side checks ``artifactize doctor`` needs, wired from the services: is the
state home writable, does the team store answer, and the ports the domain's ``Doctor`` asks.

Nothing here creates or changes anything: a missing state home is judged by its nearest
existing parent, and the store is only asked who the token belongs to.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from artifactize.domain.doctor import PROBE_TIMEOUT_SECONDS, DoctorPorts, StoreCheck

if TYPE_CHECKING:
    from artifactize.entrypoints.bootstrap import Services

STORE_TIMEOUT_SECONDS = PROBE_TIMEOUT_SECONDS


def state_problem(path: str) -> str | None:
    """Why ``path`` (existing or to be created) cannot hold the state, or None."""
    probe = Path(path).absolute()
    while not probe.exists():
        if probe.parent == probe:
            return "no existing parent folder"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user"
    return None


def doctor_ports(services: Services) -> DoctorPorts:
    from artifactize.entrypoints.container import DESKTOP_OPENER, FALLBACK_EDITOR
    from artifactize.ports.review_store import RemoteConfigError, RemoteFailure

    container = services.container
    state = services.state_dir()
    environment = container.environment()

    async def store() -> StoreCheck:
        stores = services.remote_stores()
        try:
            settings = stores.settings(state)
        except RemoteConfigError as exc:
            return StoreCheck(configured=True, reachable=False, detail=str(exc))
        if settings is None:
            return StoreCheck(configured=False, detail=stores.switched_off() or "")
        remote = stores.open(settings)
        try:
            with anyio.fail_after(STORE_TIMEOUT_SECONDS):
                principal = await remote.whoami()
        except RemoteFailure as exc:
            return StoreCheck(True, settings.url, exc.status is not None, exc.message)
        except TimeoutError:
            return StoreCheck(True, settings.url, False, "no answer within 2 s")
        finally:
            with anyio.CancelScope(shield=True):
                await remote.aclose()
        return StoreCheck(True, settings.url, True, f"token of {principal.name}")

    return DoctorPorts(
        backends=container.model_backends(),
        catalog=services.model_catalog(),
        programs=container.programs(),
        environment=environment,
        state_dir=state,
        state_problem=lambda: state_problem(state),
        store=store,
        desktop_opener=DESKTOP_OPENER,
        fallback_editor=FALLBACK_EDITOR,
        cwd=services.repo(),
        coding_agents=services.coding_agents(),
    )
