"""Command tools: resolving what runs, the ``json`` and ``plain`` protocols, output normalization."""
