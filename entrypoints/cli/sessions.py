"""``session show`` and ``session send``: saved Agent conversations and follow-ups.

REF is a session ID, a request ID (``run-XXXXXX-N``), or a full reference
``user@host/STATE_ID/RUN_ID/REQUEST_ID/SESSION_ID`` (its last part is the session ID).
"""

from __future__ import annotations

import re
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit_json
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError
from artifactize.ports.conversations import ConversationNotFound
from artifactize.ports.ids import RequestId, SessionId

REQUEST_ID = re.compile(r"\Arun-[A-Za-z0-9]+-[0-9]+\Z")

session_app = ConventionalTyper(
    help="Saved Agent conversations and follow-up questions.", no_args_is_help=True
)


# The conversation a command reads: its session ID, a request ID or a full reference.
SessionRef = Annotated[str, argument("A session ID, a request ID, or a full reference.")]


def resolve_session(ref: str) -> SessionId:
    """The session ID a REF names; a request ID is looked up in the state."""
    if "/" in ref:
        return SessionId(ref.rstrip("/").rsplit("/", 1)[1])
    if REQUEST_ID.match(ref):
        state = CliContext.services().open_state(create=False)
        request = state.get_request(RequestId(ref)) if state is not None else None
        if request is None:
            raise CommandError(f"Unknown request: {ref}")
        session_id = request.data.session_id
        if not session_id:
            raise CommandError(f"Request {ref} has no saved Agent conversation.")
        return SessionId(str(session_id))
    return SessionId(ref)


@session_app.command("show")
def session_show(
    ref: SessionRef,
    summary: Annotated[
        bool, option("--summary", "Only the review, follow-ups and endings.")
    ] = False,
) -> None:
    """Print a saved Agent conversation: text, or its raw events with --json."""
    from artifactize.domain.reviews.agent.conversations import conversation_text

    session_id = resolve_session(ref)
    try:
        events = CliContext.services().conversations().read(session_id)
    except ConversationNotFound as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        emit_json(events)
    else:
        typer.echo(conversation_text(events, summary))


@session_app.command("send")
def session_send(
    ref: SessionRef,
    message: Annotated[str, argument("The follow-up question.")],
) -> None:
    """Ask a finished Agent review a follow-up question. Tools run as in the review, in fresh
    tool sessions; the answer is not a verdict and changes no result."""
    import anyio

    from artifactize.domain.reviews.agent.conversations import ConversationError

    session_id = resolve_session(ref)
    service = CliContext.services().followup(session_id)
    try:
        result = anyio.run(service.send, session_id, message)
    except (ConversationNotFound, ConversationError) as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        emit_json(
            {
                "sessionId": session_id,
                "answer": result.answer,
                "error": result.error,
                "errorCode": result.error_code,
                "toolCalls": result.tool_calls,
            }
        )
    elif result.answer is not None:
        typer.echo(result.answer)
    else:
        typer.echo(f"error: {result.error}", err=True)
    raise typer.Exit(ExitCode.OK if result.answer is not None else ExitCode.ERROR)
