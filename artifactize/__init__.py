"""artifactize: review the Artifacts of a repository through declared tools.

The one top-level package the distribution installs. Its four layers live at the
repository's top (``domain/``, ``ports/``, ``adapters/``, ``entrypoints/``, as the design
card lays them out); in a checkout, ``artifactize/`` holds a symbolic link to each, and the
wheel copies them in as ``artifactize.domain`` and so on (pyproject.toml).
"""
