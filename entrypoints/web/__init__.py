"""``artifactize web``: the Human reviewer and the monitor in a browser (docs/web.md)."""
