"""The command line: ``artifactize`` (``app``) and its command groups, one module per group."""
