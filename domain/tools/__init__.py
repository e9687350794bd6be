"""The tools layer: built-in tools, the registry, tool results."""
