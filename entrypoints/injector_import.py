"""dependency-injector, imported without its web-framework and settings integrations.

Its ``wiring`` module (imported by ``containers``) looks for FastAPI, fast-depends,
Starlette and Werkzeug at import time, to recognise their ``Depends`` markers when it wires
functions. We never use wiring, but Starlette is installed (the store server and the MCP
server run on it), so every command that builds the container paid for importing
``starlette.requests`` and what it pulls in (anyio, http.client, the email parser,
python-multipart): about a third of the container's import time, measured with
``python -X importtime`` (``bench/startup.py`` measures ``config check``).

Its ``providers`` module likewise imports pydantic (for ``Configuration.from_pydantic``)
and PyYAML (for ``from_yaml``), which we never use either: pydantic alone was another
fifth of a ``config check``'s start.

Those lookups are ``ImportError``-guarded, so while dependency-injector is imported these
modules are reported missing, then they are importable again: a later
``import starlette`` (``server run``, ``mcp``) or ``import pydantic`` works as usual.
"""

from __future__ import annotations

import sys

_UNUSED_INTEGRATIONS = (
    "fastapi",
    "fast_depends",
    "starlette",
    "werkzeug",
    "pydantic",
    "pydantic_settings",
    "yaml",
)


class _Unavailable:
    """A meta-path finder that answers "not installed" for the unused integrations.

    A finder rather than ``None`` entries in ``sys.modules``: the Cython-compiled
    ``providers`` module takes any ``sys.modules`` entry, ``None`` included, for the module."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in _UNUSED_INTEGRATIONS:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def _import_injector() -> None:
    # A module already imported is taken from sys.modules: the finder is never asked.
    finder = _Unavailable()
    sys.meta_path.insert(0, finder)
    try:
        import dependency_injector.containers  # noqa: F401
    finally:
        sys.meta_path.remove(finder)


_import_injector()

from dependency_injector import containers, providers  # noqa: E402

__all__ = ["containers", "providers"]
