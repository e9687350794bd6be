"""The stand-in model: ``artifactize stand-in -- COMMAND``, the README tour's way to try an
Agent review without an API key or a model.

It serves the OpenAI Responses and Anthropic Messages APIs (streamed, as the backends ask)
on 127.0.0.1, runs ``COMMAND`` with the endpoints pointed at itself and fake keys set, and
stops when the command ends, exiting with its code. It is part of the installed package and
needs nothing but the interpreter artifactize runs on, so it works from ``uv tool install``
or ``pipx`` whatever ``python3`` is on ``PATH``.

Each review goes the same way, so a dry run exercises the declared tools: the stand-in calls
each Agent tool of the eval once, in the order the request lists them, with the least
arguments its input schema accepts; then it answers GREEN with the least result the eval's
GREEN schema accepts (read from the prompt). Every answer says what it is: every string it
writes says ``stand-in``, and it prints one line on stderr per answer (it reports the model
the request named, as a provider must, or the backend refuses the answer). It reviews nothing: it shows the plumbing (keys, tools, reuse), never a
verdict to trust.

``least_instance``, ``responses_events`` and ``messages_events`` are also what the test
suite's fake provider (tests/support/fake_provider.py) builds its answers with.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import typer

OPENAI_RESPONSES = "/responses"
ANTHROPIC_MESSAGES = "/v1/messages"
MODEL_LISTS = ("/models", "/v1/models")
GREEN_SCHEMA_MARK = "GREEN result schema:\n"
STAND_IN_TEXT = "stand-in"
STAND_IN_MODEL = "stand-in"  # when a request names no model
FAKE_OPENAI_KEY = "sk-stand-in-not-a-key"
FAKE_ANTHROPIC_KEY = "sk-ant-stand-in-not-a-key"
USAGE = "usage: artifactize stand-in -- COMMAND [ARG...]"
ANSWERED = "stand-in: {what} (no model reviewed anything)"
OPENAI_USAGE: Mapping[str, Any] = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}
ANTHROPIC_USAGE: Mapping[str, Any] = {"input_tokens": 0, "output_tokens": 0}


def least_instance(schema: Any) -> Any:
    """The smallest value ``schema`` accepts, for the schemas evals and tools declare (const,
    enum, objects with required properties, bounded arrays, strings and numbers)."""
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: least_instance(properties.get(name)) for name in schema.get("required", [])}
    if kind == "array":
        return [least_instance(schema.get("items")) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return STAND_IN_TEXT.ljust(schema.get("minLength", 0), "!")
    if kind in ("integer", "number"):
        if "minimum" in schema:
            return schema["minimum"]
        if "exclusiveMinimum" in schema:
            return schema["exclusiveMinimum"] + 1
        return 1
    if kind == "boolean":
        return True
    return None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _halves(text: str) -> tuple[str, str]:
    return text[: len(text) // 2], text[len(text) // 2 :]


def responses_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Responses stream of ``response``: created, each output item added (with its
    text or arguments as deltas) and done, then the final event carrying the response."""
    start = {**response, "status": "in_progress", "output": []}
    start.pop("usage", None)
    start.pop("incomplete_details", None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for index, item in enumerate(response.get("output") or []):
        item_id = str(item.get("id", f"item_{index}"))
        if item.get("type") == "message":
            opened = {**item, "status": "in_progress", "content": []}
        elif item.get("type") == "function_call":
            opened = {**item, "status": "in_progress", "arguments": ""}
        else:
            opened = dict(item)
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        if item.get("type") == "message":
            for part_index, part in enumerate(item.get("content") or []):
                if part.get("type") != "output_text":
                    continue
                where = {"item_id": item_id, "output_index": index, "content_index": part_index}
                text = str(part.get("text", ""))
                for piece in _halves(text):
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            **where,
                            "delta": piece,
                            "logprobs": [],
                        }
                    )
                events.append(
                    {"type": "response.output_text.done", **where, "text": text, "logprobs": []}
                )
        elif item.get("type") == "function_call":
            where = {"item_id": item_id, "output_index": index}
            arguments = str(item.get("arguments", ""))
            events.append(
                {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
            )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "arguments": arguments,
                    "name": item.get("name"),
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = {
        "completed": "response.completed",
        "incomplete": "response.incomplete",
        "failed": "response.failed",
    }.get(str(response.get("status")), "response.completed")
    events.append({"type": final, "response": dict(response)})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def messages_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Messages stream of ``message``: message_start, each block started, its text,
    thinking, signature or JSON input as deltas, stopped; message_delta with the stop
    reason and the usage, message_stop."""
    usage = message.get("usage")
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    if isinstance(usage, dict):
        first = (
            {"output_tokens": min(1, usage["output_tokens"])} if "output_tokens" in usage else {}
        )
        start["usage"] = {**usage, **first}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message.get("content") or []):
        kind = block.get("type")
        where = {"index": index}
        if kind == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            events.append({"type": "content_block_start", **where, "content_block": opened})
            for piece in _halves(str(block.get("text", ""))):
                delta = {"type": "text_delta", "text": piece}
                events.append({"type": "content_block_delta", **where, "delta": delta})
        elif kind == "tool_use":
            events.append(
                {"type": "content_block_start", **where, "content_block": {**block, "input": {}}}
            )
            partial = block.get("input")
            for piece in _halves(partial if isinstance(partial, str) else _compact(partial)):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append({"type": "content_block_delta", **where, "delta": delta})
        elif kind == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            events.append({"type": "content_block_start", **where, "content_block": opened})
            thinking = {"type": "thinking_delta", "thinking": block.get("thinking", "")}
            signature = {"type": "signature_delta", "signature": block.get("signature", "")}
            events.append({"type": "content_block_delta", **where, "delta": thinking})
            events.append({"type": "content_block_delta", **where, "delta": signature})
        else:
            events.append({"type": "content_block_start", **where, "content_block": dict(block)})
        events.append({"type": "content_block_stop", **where})
    end: dict[str, Any] = {
        "type": "message_delta",
        "delta": {
            "stop_reason": message.get("stop_reason"),
            "stop_sequence": message.get("stop_sequence"),
        },
    }
    if isinstance(usage, dict):
        end["usage"] = dict(usage)
    events.append(end)
    events.append({"type": "message_stop"})
    return events


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def green_result(body: Mapping[str, Any]) -> Any:
    """The least result the prompt's GREEN schema accepts (``{"verdict": "GREEN"}`` when the
    prompt shows none)."""
    for text in _strings(body):
        start = text.find(GREEN_SCHEMA_MARK)
        if start != -1:
            schema, _ = json.JSONDecoder().raw_decode(text, start + len(GREEN_SCHEMA_MARK))
            return least_instance(schema)
    return {"verdict": "GREEN"}


def _declared_tools(body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, input schema) of each tool the request offers, in its order."""
    tools = body.get("tools") or []
    found = []
    for tool in tools:
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
            schema = tool.get("parameters", tool.get("input_schema"))
            found.append((tool["name"], schema))
    return found


def _called_tools(path: str, body: Mapping[str, Any]) -> set[str]:
    """The tools this conversation has called already."""
    if path == OPENAI_RESPONSES:
        items = body.get("input") or []
        return {
            str(item.get("name"))
            for item in items
            if isinstance(item, Mapping) and item.get("type") == "function_call"
        }
    called: set[str] = set()
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                called.add(str(block.get("name")))
    return called


def answer(path: str, body: Mapping[str, Any], turn: int) -> tuple[list[dict[str, Any]], str]:
    """The stream events of the stand-in's next turn, and the stderr line saying what it did:
    the next Agent tool not called yet, else the GREEN answer."""
    called = _called_tools(path, body)
    pending = [(name, schema) for name, schema in _declared_tools(body) if name not in called]
    call_id = f"call_stand_in_{turn}"
    if pending:
        name, schema = pending[0]
        arguments = least_instance(schema) if isinstance(schema, Mapping) else {}
        said = ANSWERED.format(what=f"calls {name} {_compact(arguments)}")
        if path == OPENAI_RESPONSES:
            item = {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": _compact(arguments),
                "status": "completed",
            }
            return responses_events(_openai_response(body, [item])), said
        block = {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        return messages_events(_anthropic_message(body, [block], "tool_use")), said
    text = _compact(green_result(body))
    said = ANSWERED.format(what=f"answers GREEN {text}")
    if path == OPENAI_RESPONSES:
        message: dict[str, Any] = {
            "type": "message",
            "id": f"msg_{call_id}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return responses_events(_openai_response(body, [message])), said
    block = {"type": "text", "text": text}
    return messages_events(_anthropic_message(body, [block], "end_turn")), said


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    return model if isinstance(model, str) else STAND_IN_MODEL


def _openai_response(body: Mapping[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_stand_in",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": _model(body),
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": dict(OPENAI_USAGE),
    }


def _anthropic_message(
    body: Mapping[str, Any], content: list[dict[str, Any]], stop_reason: str
) -> dict[str, Any]:
    return {
        "id": "msg_stand_in",
        "type": "message",
        "role": "assistant",
        "model": _model(body),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(ANTHROPIC_USAGE),
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    turns = 0
    lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the command's own output is what the user reads."""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] in MODEL_LISTS:
            listing = {"object": "list", "data": [{"id": STAND_IN_MODEL, "object": "model"}]}
            self._send(200, _compact(listing).encode(), "application/json")
            return
        self._send(404, b'{"error": {"message": "not served by the stand-in"}}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0]
        if path not in (OPENAI_RESPONSES, ANTHROPIC_MESSAGES):
            self._send(
                404, b'{"error": {"message": "not served by the stand-in"}}', "application/json"
            )
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, b'{"error": {"message": "not JSON"}}', "application/json")
            return
        with self.server.lock:
            self.server.turns += 1
            turn = self.server.turns
        events, said = answer(path, body, turn)
        print(said, file=sys.stderr, flush=True)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {_compact(event)}\n\n".encode())
        self.wfile.flush()


def serve_and_run(command: Sequence[str], environment: Mapping[str, str]) -> int:
    """Serve the stand-in on 127.0.0.1, run ``command`` against it, return its exit code."""
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    env = {
        **environment,
        "ARTIFACTIZE_OPENAI_BASE_URL": base,
        "ARTIFACTIZE_ANTHROPIC_BASE_URL": base,
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
    }
    try:
        child = subprocess.Popen(list(command), env=env)
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.terminate()
            return child.wait()
    except OSError as exc:
        print(f"error: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        server.shutdown()
        server.server_close()


def run_stand_in(argv: Sequence[str]) -> int:
    """``artifactize stand-in [--] COMMAND [ARG...]``: the command line after ``stand-in``
    is another program's, so it is taken as it is, never parsed as our options."""
    import os

    command = list(argv[1:] if argv[:1] == ["--"] else argv)
    if not command:
        print(USAGE, file=sys.stderr)
        return 2
    return serve_and_run(command, os.environ)


def stand_in_command() -> None:
    """Run a command with a stand-in model that calls each Agent tool once, then says GREEN.

    Usage: artifactize stand-in -- COMMAND [ARG...]. It serves the OpenAI and Anthropic APIs
    on 127.0.0.1 with fake keys and exits with the command's code; no review is made.
    """
    print(USAGE, file=sys.stderr)  # reached only without a command (app.main runs the rest)
    raise typer.Exit(2)
