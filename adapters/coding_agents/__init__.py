"""Coding agents (Claude Code, Codex) as Agent backends: see docs/agents.md."""
