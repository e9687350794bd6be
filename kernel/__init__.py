"""The shared kernel: pure logic on the data that crosses the ports (status transitions,
bounded JSON, timestamps), used alike by the domain, the adapters and the entrypoints.

It sits between ``ports`` (whose data it works on) and the layers above; it imports
``ports`` only and does no I/O (import-linter holds both)."""
