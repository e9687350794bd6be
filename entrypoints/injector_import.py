"""dependency-injector, imported without its web-framework integrations.

Its ``wiring`` module (imported by ``containers``) looks for FastAPI, fast-depends,
Starlette and Werkzeug at import time, to recognise their ``Depends`` markers when it wires
functions. We never use wiring, but Starlette is installed (the store server and the MCP
server run on it), so every command that builds the container paid for importing
``starlette.requests`` and what it pulls in (anyio, http.client, the email parser,
python-multipart): about a third of the container's import time, measured with
``python -X importtime`` (``bench/startup.py`` measures ``config check``).

Those lookups are ``ImportError``-guarded, so while dependency-injector is imported the
four are marked missing in ``sys.modules``, then the marks are removed: a later
``import starlette`` (``server run``, ``mcp``) works as usual.
"""

from __future__ import annotations

import sys

_FRAMEWORKS = ("fastapi", "fast_depends", "starlette", "werkzeug")


def _import_injector() -> None:
    marked = [name for name in _FRAMEWORKS if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]  # "import name" raises ImportError
    try:
        import dependency_injector.containers  # noqa: F401
    finally:
        for name in marked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


_import_injector()

from dependency_injector import containers, providers  # noqa: E402

__all__ = ["containers", "providers"]
