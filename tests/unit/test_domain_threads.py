"""The domain's threads go through the ``WorkerThreads`` port (ports/threads.py).

import-linter forbids ``threading`` and ``concurrent`` in the domain but cannot name a
subpackage of an external package, so a call to ``anyio.to_thread`` (or
``anyio.from_thread``) reached through ``import anyio`` is found here instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("to_thread", "from_thread")


def thread_calls(source: str) -> list[str]:
    """``anyio.to_thread``-like uses in one module's source: attributes and imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"line {node.lineno}: {n}" for n in names if n.endswith(FORBIDDEN)]
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: {a.name}" for a in node.names if a.name.endswith(FORBIDDEN)
            ]
    return found


def test_the_check_finds_each_form() -> None:
    source = (
        "import anyio\nimport anyio.to_thread\nfrom anyio import from_thread\n"
        "async def f():\n    await anyio.to_thread.run_sync(print)\n"
    )
    assert thread_calls(source) == [
        "line 2: anyio.to_thread",
        "line 3: anyio.from_thread",
        "line 5: .to_thread",
    ]
    assert thread_calls("import anyio\nasync def f(threads):\n    await threads.run(print)\n") == []


def test_the_domain_starts_no_thread_of_its_own() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): calls
        for path in sorted((ROOT / "domain").rglob("*.py"))
        if (calls := thread_calls(path.read_text(encoding="utf-8")))
    }
    assert found == {}
