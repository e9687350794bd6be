"""``artifactize mcp``: an eval's Agent tools over the Model Context Protocol (the ``mcp`` SDK)."""
