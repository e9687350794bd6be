"""``artifactize doctor``: is this machine ready for the workspace's reviews?

For each backend the workspace's Agent evals use (their profiles and variants): the
endpoint and who chose it, whether its key is set (never its value) and required, whether
it answers a model listing within ``PROBE_TIMEOUT_SECONDS``, the proxy in effect, and the
loopback rule (a loopback endpoint keeps verdicts out of the team store unless
``ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1``). Then the state home, the team store, and
what Human reviews need: ``$VISUAL``/``$EDITOR`` and the desktop opener.

``ready`` is true when everything the workspace needs is: a check the workspace does not
need (an editor without Human evals, say) is reported but does not count.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from artifactize.domain.declarations.model import (
    AgentProfile,
    BuiltinHumanTool,
    HumanProfile,
    Profile,
)
from artifactize.domain.project.workspace import Workspace
from artifactize.ports.coding_agents import CODING_AGENT_BACKENDS, CodingAgents
from artifactize.ports.model import BackendUnavailable, ModelBackends, ModelCatalog
from artifactize.ports.programs import ProgramFinder

PROBE_TIMEOUT_SECONDS = 2.0
EDITOR_VARIABLES = ("VISUAL", "EDITOR")
DEFAULT_EDITOR = "vi"
REJECTED_KEY_STATUSES = (401, 403)
LOOPBACK_STORE_RULE = (
    "loopback endpoint: its verdicts stay out of the team store "
    "(ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1 lets them in)"
)
LOOPBACK_ALLOWED = "loopback endpoint: ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1 lets its verdicts into the team store"


@dataclass(frozen=True)
class StoreCheck:
    configured: bool
    url: str | None = None
    reachable: bool | None = None
    detail: str = ""


@dataclass(frozen=True)
class DoctorPorts:
    backends: ModelBackends
    catalog: ModelCatalog
    programs: ProgramFinder
    environment: Mapping[str, str]
    state_dir: str
    state_problem: Callable[[], str | None]  # why the state home is not writable, or None
    store: Callable[[], Awaitable[StoreCheck]]
    desktop_opener: str = "xdg-open"
    fallback_editor: str = DEFAULT_EDITOR  # the root names Notepad on Windows
    cwd: str = "/"
    coding_agents: CodingAgents | None = None


@dataclass
class Doctor:
    ports: DoctorPorts
    problems: list[str] = field(default_factory=list)

    async def report(
        self, workspace: Workspace | None, workspace_error: str | None
    ) -> dict[str, Any]:
        """The whole report (camelCase JSON); ``ready`` decides the exit code."""
        self.problems = []
        if workspace_error is not None:
            self.problems.append(f"Workspace: {workspace_error}")
        uses = _backend_uses(workspace) if workspace is not None else {}
        backends = [
            await self._backend(name, base_url, evals) for (name, base_url), evals in uses.items()
        ]
        store = await self.ports.store()
        if store.configured and not store.reachable:
            self.problems.append(f"Team store {store.url}: not reachable ({store.detail}).")
        loopback = [b["backend"] for b in backends if b.get("loopback")]
        if store.configured and loopback and not self.ports.backends.loopback_models_allowed():
            self.problems.append(
                f"verify will refuse the team store while {', '.join(loopback)} uses a loopback "
                "endpoint: set ARTIFACTIZE_REMOTE=off, or ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1."
            )
        state_problem = self.ports.state_problem()
        if state_problem is not None:
            self.problems.append(f"State home {self.ports.state_dir}: {state_problem}")
        human = workspace is not None and _needs_human(workspace)
        opener_needed = workspace is not None and _needs_opener(workspace)
        editor = self._editor(human)
        opener = self._opener(opener_needed)
        return {
            "ready": not self.problems,
            "backends": backends,
            "stateHome": {
                "path": self.ports.state_dir,
                "writable": state_problem is None,
                "detail": state_problem,
            },
            "teamStore": {
                "configured": store.configured,
                "url": store.url,
                "reachable": store.reachable,
                "detail": store.detail or None,
            },
            "editor": editor,
            "desktopOpener": opener,
            "problems": list(self.problems),
        }

    async def _backend(
        self, backend: str, base_url: str | None, evals: list[str]
    ) -> dict[str, Any]:
        view: dict[str, Any] = {"backend": backend, "declaredBaseUrl": base_url, "evals": evals}
        if backend in CODING_AGENT_BACKENDS:
            return {**view, **await self._coding_agent(backend)}
        try:
            endpoint = self.ports.backends.endpoint(backend, base_url)
        except BackendUnavailable as exc:
            self.problems.append(f"{backend}: {exc}")
            return {**view, "ready": False, "detail": str(exc)}
        allowed = self.ports.backends.loopback_models_allowed()
        view.update(
            {
                "baseUrl": endpoint.base_url,
                "endpointSource": endpoint.source,
                "key": {
                    "variable": endpoint.key_variable,
                    "set": endpoint.key_set,
                    "required": endpoint.key_required,
                },
                "keySource": endpoint.key_source,
                "proxy": endpoint.proxy,
                "loopback": endpoint.loopback,
                "loopbackRule": (LOOPBACK_ALLOWED if allowed else LOOPBACK_STORE_RULE)
                if endpoint.loopback
                else None,
            }
        )
        ready = True
        if endpoint.key_required and not endpoint.key_set:
            self.problems.append(f"{backend}: {endpoint.key_variable} is required and not set.")
            view["answers"] = None
            return {**view, "ready": False}
        try:
            with anyio.fail_after(PROBE_TIMEOUT_SECONDS * 2):  # the probe bounds itself
                probe = await self.ports.catalog.probe(backend, base_url, PROBE_TIMEOUT_SECONDS)
        except (BackendUnavailable, TimeoutError) as exc:
            self.problems.append(f"{backend}: {exc or 'no answer'}")
            return {**view, "answers": False, "ready": False}
        view.update(
            {
                "answers": probe.answered,
                "status": probe.status,
                "seconds": probe.seconds,
                "detail": probe.detail or None,
            }
        )
        if not probe.answered:
            ready = False
            self.problems.append(
                f"{backend}: {endpoint.base_url} did not answer within "
                f"{PROBE_TIMEOUT_SECONDS:g} s ({probe.detail})."
            )
        elif probe.status in REJECTED_KEY_STATUSES:
            ready = False
            self.problems.append(
                f"{backend}: {endpoint.base_url} refused the key in {endpoint.key_variable} "
                f"(HTTP {probe.status})."
            )
        return {**view, "ready": ready}

    async def _coding_agent(self, backend: str) -> dict[str, Any]:
        """A coding agent's CLI: found where, which version, signed in (its own sign-in;
        artifactize holds none of its credentials)."""
        agents = self.ports.coding_agents
        if agents is None:
            detail = f"the {backend} backend is not available in this build"
            self.problems.append(f"{backend}: {detail}.")
            return {"ready": False, "detail": detail}
        install = await agents.install(backend)
        if not install.ready:
            self.problems.append(f"{backend}: {install.detail}")
        return install.to_json()

    def _editor(self, needed: bool) -> dict[str, Any]:
        for variable in EDITOR_VARIABLES:
            value = self.ports.environment.get(variable, "").strip()
            if value:
                return {"variable": variable, "command": value, "needed": needed}
        fallback = self.ports.fallback_editor
        found = self.ports.programs.find_on_path(
            fallback, self.ports.environment.get("PATH", ""), self.ports.cwd
        )
        if needed and found is None:
            self.problems.append(
                f"Human reviews: neither $VISUAL nor $EDITOR is set and {fallback} is not on PATH."
            )
        return {"variable": None, "command": found, "needed": needed}

    def _opener(self, needed: bool) -> dict[str, Any]:
        name = self.ports.desktop_opener
        found = self.ports.programs.find_on_path(
            name, self.ports.environment.get("PATH", ""), self.ports.cwd
        )
        if needed and found is None:
            self.problems.append(f"Human tools that open files: {name} is not on PATH.")
        return {"program": name, "path": found, "needed": needed}


def _backend_uses(workspace: Workspace) -> dict[tuple[str, str | None], list[str]]:
    """(backend, declared base_url) → the evals (and variants) that use it, in order."""
    uses: dict[tuple[str, str | None], list[str]] = {}
    for ref in workspace.evals():
        profiles: list[tuple[str, Profile]] = [(ref.qualified_id, ref.eval.profile)]
        variants = ref.eval.profile_variants
        profiles += [(f"{ref.qualified_id} ({name})", p) for name, p in variants.items()]
        for label, profile in profiles:
            if isinstance(profile, AgentProfile):
                uses.setdefault((profile.backend, profile.base_url), []).append(label)
    return uses


def _needs_human(workspace: Workspace) -> bool:
    return any(isinstance(ref.eval.profile, HumanProfile) for ref in workspace.evals())


def _needs_opener(workspace: Workspace) -> bool:
    return any(
        isinstance(tool, BuiltinHumanTool) and tool.builtin == "open"
        for artifact in workspace.artifacts.values()
        for tool in artifact.human_tools
    )
