"""The version of artifactize, written once: pyproject.toml reads it (``dynamic``), and
``--version`` prints it without importlib.metadata (a sixth of ``--version``'s start)."""

VERSION = "0.1.0"
