"""Use cases: what a command asks of the domain, one module each (``config``,
``doctor``, ``login``, ``verify``, ``status``, ``prune``, ``request``, ``tools check``,
``mcp``, ``session send``, ``remote push``), called with the ports the composition
root builds.

They orchestrate the rooms beside them; no room imports a use case (import-linter).
"""
