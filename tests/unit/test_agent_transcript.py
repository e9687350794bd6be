"""The README's agent section shows the transcript the clients lane captured
(tests/clients/test_claude_code_explains_a_red.py writes both), not an illustrative one."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPT = REPO / "docs" / "agents" / "claude-code-explains-a-red.txt"
BEGIN = "<!-- transcript: docs/agents/claude-code-explains-a-red.txt -->\n"
END = "<!-- /transcript -->\n"


def test_the_readme_shows_the_captured_transcript() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = readme[readme.index(BEGIN) + len(BEGIN) : readme.index(END)]
    captured = TRANSCRIPT.read_text(encoding="utf-8")
    assert shown == f"```text\n{captured}```\n"
    lines = captured.splitlines()
    assert lines[0] == "$ artifactize agent-setup claude"
    assert [line.split()[3] for line in lines if line.startswith("⏺ artifactize - ")][:2] == [
        "status",
        "verify_start",
    ]
    assert "is RED: " in lines[-1], "the answer explains the RED"
