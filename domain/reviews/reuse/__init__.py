"""Reuse: Artifact fingerprints, gitignore rules, canonical JSON and the keys a verdict is reused by."""
