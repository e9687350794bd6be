"""``backend = "codex"``: the real Codex CLI (npm, pinned, ``tests/support/npm_clients.py``)
against the fake provider's Responses API, end to end through ``verify`` on a copy of the
bundled example whose ``calc/review`` runs on Codex (``tests/support/agent_world.py``).

Codex does not read ``OPENAI_BASE_URL`` itself; artifactize maps it to a model provider of
its own, which is how Codex reaches the fake here. Codex lists an MCP server's tools in a
namespace (``mcp__artifactize``), so the scripted model calls them with that namespace.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_world import (
    DECLARED_TOOLS,
    AgentClient,
    AgentWorld,
    Script,
    request_of,
)
from tests.support.fake_provider import (
    FAKE_OPENAI_KEY,
    FakeProvider,
    Reply,
    hang,
    openai_function_call_item,
    openai_response,
    openai_text,
    openai_tool_call,
)
from tests.support.npm_clients import CODEX_VERSION, codex

MODEL = "gpt-5.5"  # a model of Codex's catalog that comes with apply_patch
NAMESPACE = "mcp__artifactize"
MCP_RESOURCE_TOOLS = {"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}


@pytest.fixture(scope="module")
def codex_program() -> Path:
    return codex()


CLIENT = AgentClient(
    "codex", "ARTIFACTIZE_CODEX_PATH", MODEL, "OPENAI_BASE_URL", "OPENAI_API_KEY", FAKE_OPENAI_KEY
)
new_world = CLIENT.world
signed_in = CLIENT.signed_in


@pytest.fixture
def world(tmp_path: Path, codex_program: Path) -> Iterator[AgentWorld]:
    yield from CLIENT.worlds(tmp_path, codex_program)


def our_tool(call_id: str, name: str, arguments: Mapping[str, Any]) -> Reply:
    item = {**openai_function_call_item(call_id, f"{name}_calc", arguments), "namespace": NAMESPACE}
    return openai_response([item])


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    return {
        item["call_id"]: item["output"]
        for item in body["input"]
        if item.get("type") == "function_call_output"
    }


def test_codex_reviews_with_only_the_declared_tools_and_the_verdict_is_reused(
    world: AgentWorld,
) -> None:
    model = Script(
        openai_tool_call("c_shell", "shell", {"command": ["cat", "/etc/passwd"]}),
        openai_tool_call("c_exec", "exec_command", {"cmd": "cat /etc/passwd"}),
        openai_tool_call("c_patch", "apply_patch", {"input": "*** Begin Patch"}),
        our_tool("c_read", "read", {"path": "src/calc.py"}),
        our_tool("c_shot", "shot", {"path": "diagram.png"}),
        openai_text('{"verdict": "GREEN"}'),
    )
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
        request = request_of(run)
        assert (code, request["status"]) == (0, "GREEN"), request
        tools = model.body(0)["tools"]
        names = {tool.get("name") for tool in tools}
        assert names == MCP_RESOURCE_TOOLS | {NAMESPACE}, tools
        [ours] = [tool for tool in tools if tool.get("name") == NAMESPACE]
        assert sorted(t["name"] for t in ours["tools"]) == sorted(
            f"{n}_calc" for n in DECLARED_TOOLS
        )
        answered = outputs(model.body(5))
        for call_id, name in (
            ("c_shell", "shell"),
            ("c_exec", "exec_command"),
            ("c_patch", "apply_patch"),
        ):
            assert answered[call_id] == f"unsupported call: {name}"
        assert "def divide" in json.dumps(answered["c_read"])
        assert any(part.get("type") == "input_image" for part in answered["c_shot"]), answered[
            "c_shot"
        ]
        assert [call["name"] for call in request["toolCalls"]] == ["read_calc", "shot_calc"]
        assert request["agent"]["requestedModel"] == MODEL
        # the model Codex recorded for the turn (its session file under the world's HOME)
        assert request["agent"]["reportedModel"] == MODEL
        [attempt] = request["usage"]
        assert attempt["usage"]["inputTokens"] > 0 and attempt["usage"]["totalTokens"] > 0

        again_code, again = world.verify(fake, **signed_in(fake))
        assert again_code == 0
        assert request_of(again)["source"]["kind"] == "cache"
        assert len(model.requests) == 6, "the second verify reused the verdict"


def test_an_invalid_answer_is_repaired_once_in_the_same_codex_thread(world: AgentWorld) -> None:
    model = Script(openai_text("Looks correct to me."), openai_text('{"verdict": "RED"}'))
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
    assert (code, request_of(run)["status"]) == (1, "RED"), request_of(run)["error"]
    resumed = json.dumps(model.body(1)["input"])
    assert "Looks correct to me." in resumed, "the repair resumed the thread"
    assert "did not match the required schema" in resumed


def test_a_tool_call_budget_stops_codex_group_and_all(tmp_path: Path, codex_program: Path) -> None:
    world = new_world(tmp_path, codex_program, ", max_tool_calls = 1")
    model = Script(*[our_tool(f"c_{n}", "read", {"path": "src/calc.py"}) for n in range(2)])
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
    request = request_of(run)
    assert (code, request["errorCode"]) == (2, "PROVIDER_BUDGET_EXCEEDED"), request
    world.nothing_left()


def test_a_cancelled_codex_review_leaves_nothing_behind(world: AgentWorld) -> None:
    model = Script(hang())
    with FakeProvider(responder=model, check_sdk=False) as fake:
        run = world.interrupted_verify(world.env(fake, **signed_in(fake)), model)
    assert request_of(run)["errorCode"] == "CANCELLED"


def stand_in(events: str) -> str:
    """A ``codex`` that passes the version and catalog checks, then prints ``events``."""
    return (
        f'case "$1" in --version) echo "codex-cli {CODEX_VERSION}"; exit 0;; '
        "debug) echo '{\"models\": []}'; exit 0;; esac\n" + events
    )


COMMAND_ITEM = json.dumps(
    {"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "ls"}}
)


@pytest.mark.parametrize(
    ("events", "code", "message"),
    [
        ("echo boom >&2\nexit 3", "AGENT_ERROR", r"ended \(exit code 3\) without completing"),
        ("echo 'Welcome to Codex'\nsleep 60", "AGENT_ERROR", "not its JSON event stream"),
        (
            f"echo '{COMMAND_ITEM}'\nsleep 60",
            "AGENT_UNAVAILABLE",
            r"did not serve \(command_execution\)",
        ),
    ],
    ids=["crash", "not-its-protocol", "not-confined"],
)
def test_a_broken_codex_ends_the_review_error_with_a_code(
    world: AgentWorld, events: str, code: str, message: str
) -> None:
    program = world.fake_program(stand_in(events))
    with FakeProvider(check_sdk=False) as fake:
        status, run = world.verify(fake, **signed_in(fake), ARTIFACTIZE_CODEX_PATH=str(program))
    request = request_of(run)
    assert (status, request["errorCode"]) == (2, code), request
    assert re.search(message, request["error"]), request["error"]


@pytest.mark.parametrize("signed", [True, False])
def test_doctor_says_where_codex_is_its_version_and_whether_it_is_signed_in(
    world: AgentWorld, signed: bool
) -> None:
    _, agent = CLIENT.doctor(world, signed)
    assert agent["version"] == CODEX_VERSION
    assert agent["signedIn"] is signed and agent["ready"] is signed
    if not signed:
        assert "codex login" in agent["detail"]


def test_a_model_the_server_rerouted_to_is_reported_and_ends_the_review_error(
    world: AgentWorld,
) -> None:
    """The server answers with another model (its ``openai-model`` header, as OpenAI's API
    does); Codex says it rerouted, and the review ends as an API review's mismatch does."""
    served = "gpt-5.4-mini"
    rerouted = dataclasses.replace(
        openai_text('{"verdict": "GREEN"}'), headers={"openai-model": served}
    )
    with FakeProvider(responder=Script(rerouted), check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
    request = request_of(run)
    assert (code, request["errorCode"]) == (2, "PROVIDER_ERROR"), request
    assert request["error"].startswith(
        f"Provider model mismatch: requested {MODEL}, received {served}."
    ), request["error"]
    assert request["agent"]["reportedModel"] == served


@pytest.mark.parametrize("signed", [True, False])
def test_models_lists_what_codex_offers_with_its_version_and_sign_in(
    world: AgentWorld, codex_program: Path, signed: bool
) -> None:
    with FakeProvider(check_sdk=False) as fake:
        done = world.run(fake, "models", "codex", **(signed_in(fake) if signed else {}))
        env = world.env(fake, **(signed_in(fake) if signed else {}))
    assert done.returncode == 0, done.stdout + done.stderr
    listed = json.loads(done.stdout)
    # the reference: the catalog Codex itself prints, the models its picker shows
    catalog = subprocess.run(
        [str(codex_program), "debug", "models"],
        capture_output=True,
        text=True,
        env=env,
        cwd=world.root,
        timeout=60,
    )
    shown = [m["slug"] for m in json.loads(catalog.stdout)["models"] if m["visibility"] == "list"]
    assert listed["models"] == shown and MODEL in shown, listed["models"]
    assert (listed["version"], listed["signedIn"], listed["note"]) == (CODEX_VERSION, signed, None)
    assert fake.posts() == [], "listing called no model"


def test_models_of_a_codex_that_cannot_list_them_says_so(world: AgentWorld) -> None:
    program = world.fake_program(
        f'case "$1" in --version) echo "codex-cli {CODEX_VERSION}"; exit 0;; '
        'login) echo "Logged in using an API key"; exit 0;; esac\necho nonsense; exit 1'
    )
    with FakeProvider(check_sdk=False) as fake:
        done = world.run(fake, "models", "codex", ARTIFACTIZE_CODEX_PATH=str(program))
    listed = json.loads(done.stdout)
    assert (done.returncode, listed["models"]) == (0, []), listed
    assert listed["note"] == (
        f"Codex {CODEX_VERSION} did not list its models (codex debug models: exit code 1); "
        "it takes a model name (gpt-5.5, say) as a profile's model."
    )
