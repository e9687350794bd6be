"""Pure rules and use cases of artifactize, written against the ports.

No module here performs I/O; the import contract (``make lint``) enforces it.
"""
