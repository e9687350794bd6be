"""Callbacks the composition root hands to the domain: each does I/O on the domain's behalf.

They are plain callables (a bound method or a lambda fits), named here so a port bundle says
what it expects. The workspace type belongs to the domain, so the loaders are generic in it.
Parameters are positional-only: any callable of the right shape fits, whatever it names them.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from artifactize.ports.ids import RunId

W_co = TypeVar("W_co", covariant=True)


class WorkspaceLoader(Protocol[W_co]):
    def __call__(self, repo: str, /) -> W_co:
        """Read the declarations of the repository at ``repo`` (again)."""
        ...


class WorkspaceReloader(Protocol[W_co]):
    def __call__(self) -> W_co:
        """Read the declarations of the repository under review again."""
        ...


class OutputRoots(Protocol):
    def __call__(self, run_id: RunId, /) -> str:
        """A private directory (created if needed) that holds the output of ``run_id``'s
        tools, outside the reviewed repository."""
        ...


class ProgressSink(Protocol):
    def __call__(self, notice: str, /) -> None:
        """Show a progress notice to the person at the terminal."""
        ...


class WarningSink(Protocol):
    def __call__(self, warning: str, /) -> None:
        """Tell the user about something that did not stop the action."""
        ...
