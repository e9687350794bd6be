"""Extreme JSON from a tool or on the command line never ends in a traceback.

A json tool that prints ``1e400``, a 10,000-digit integer, 50,000-deep nesting or
``isError`` twice gets the generic invalid-output result; ``--args`` with a 5,000-digit
integer or 50,000-deep nesting is exit 2 naming ``--args`` and the rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_tools_check_cli import (
    Env,
    full,
    run_cli,
)

INVALID_OUTPUT = "Agent tool returned invalid output."
PYTHON_WORDING = ("Traceback", "set_int_max_str_digits", "RecursionError", "Exceeds the limit")

PRINTS = {
    "infinite": '{"content":[{"type":"json","data":1e400}]}',
    "10000-digits": '{"content":[{"type":"json","data":' + "1" * 10_000 + "}]}",
    "50000-deep": '{"content":[{"type":"json","data":' + "[" * 50_000 + "]" * 50_000 + "}]}",
    "duplicate-isError": '{"content":[{"type":"text","text":"x"}],"isError":true,"isError":false}',
}


def json_tool(root: Path, prints: str) -> Path:
    (root / "a" / "tool.py").write_text(
        "import sys\nsys.stdout.write(open(sys.argv[1]).read())\n", encoding="utf-8"
    )
    (root / "a" / "tool.py.out").write_text(prints, encoding="utf-8")
    index = root / "a" / "index.artf"
    index.write_text(
        index.read_text(encoding="utf-8").replace(
            'args = ["tool.py"]\ninput_schema', 'args = ["tool.py", "tool.py.out"]\ninput_schema'
        ),
        encoding="utf-8",
    )
    return root


@pytest.mark.parametrize("name", list(PRINTS))
def test_a_json_tool_printing_extreme_json_is_invalid_output(env: Env, name: str) -> None:
    root = json_tool(full(env.tmp / "W"), PRINTS[name])
    run = run_cli(
        env, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "agent", "--tool", "inspect",
    )  # fmt: skip
    assert not any(words in run.err + run.out for words in PYTHON_WORDING), run.err
    assert run.code == 1, (run.out, run.err)
    assert run.report["result"] == {
        "content": [{"type": "text", "text": INVALID_OUTPUT}],
        "isError": True,
    }


ARGS = {
    "5000-digits": '{"n": ' + "5" * 5000 + "}",
    "50000-deep": '{"n": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "infinite": '{"n": 1e400}',
    "duplicate": '{"n": 1, "n": 2}',
}


@pytest.mark.parametrize("name", list(ARGS))
def test_extreme_args_are_exit_2_without_a_traceback(env: Env, name: str) -> None:
    root = full(env.tmp / "W")
    for flags in ([], ["--json"]):
        run = run_cli(
            env, "--repo", str(root), *flags, "tools", "check", "--execute", "--artifact", "a",
            "--audience", "agent", "--tool", "inspect", "--args", ARGS[name],
        )  # fmt: skip
        assert run.code == 2, (run.out, run.err)
        assert not any(words in run.err + run.out for words in PYTHON_WORDING), run.err
        text = run.report["error"] if flags else run.err
        assert "Invalid --args JSON: " in text


@pytest.mark.parametrize("answer", [b'{"output":[],"n":1e400}', b'{"id":1,"id":2}', b"[" * 50_000])
def test_a_provider_answer_beyond_the_limits_is_a_provider_error(answer: bytes) -> None:
    from artifactize.adapters.llm.http import _json_object
    from artifactize.ports.model import ProviderFailure

    with pytest.raises(ProviderFailure) as caught:
        _json_object(answer, "openai", "secret")
    assert "the answer is not JSON we accept" in caught.value.message
    assert not any(words in caught.value.message for words in PYTHON_WORDING)
