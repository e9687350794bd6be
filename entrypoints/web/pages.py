"""The browser reviewer's HTML, rendered on the server (no template engine, no client build).

Every value is escaped here (``esc``); the only markup not written here is Markdown rendered
by markdown-it-py with raw HTML off and its own link validation (no ``javascript:``), and
the page's policy forbids inline script anyway. Accessible names are the ones a person (and
a test) looks for by role: buttons ``Claim``, ``Unclaim``, ``Cancel request``, ``Submit``
and one per Human tool named after its published name; the verdict a radio group
``GREEN``/``RED``; form fields labelled with their schema property names; the Tool log a
``role="log"`` named ``Tool log``; every page links ``Monitor``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from artifactize.domain.reviews.human.viewing import (
    REMOVED,
    VIEW_DEPTH_MAX,
    VIEW_FILES_MAX,
    SinceLastVerdict,
)
from artifactize.entrypoints.monitor_tui.views import (
    NO_RUNS,
    RunRow,
    TreeNode,
    build_tree,
    counts_text,
    glyph,
    run_header,
)
from artifactize.entrypoints.review_tui.form_model import FieldKind
from artifactize.entrypoints.review_tui.tool_list import ToolInfo, resolved_line
from artifactize.entrypoints.review_tui.tool_log import RowKind, ToolLog
from artifactize.entrypoints.review_tui.waiting import age_text, claimant
from artifactize.entrypoints.web.verdict_form import (
    JSON_FIELD,
    UNSET_OPTION,
    VerdictChoice,
    input_name,
)
from artifactize.ports.documents import Request
from artifactize.ports.statuses import RequestStatus

APP_NAME = "artifactize"
CSRF_FIELD = "csrf"
NO_WAITING = "No Human reviews are waiting."
NO_TOOLS = "This request has no Human tools."
CLAIM_FIRST = "Claim the request to run its tools and submit a verdict."
NO_FILES = "The scope has no files to view."
FILES_CUT = "The listing is cut at {count} files or {depth} folders deep."
NOT_RECORDED = "not recorded"
NO_EARLIER_VERDICT = "This eval has no earlier verdict."
UNSET_LABEL = "(unset)"
THIS_MACHINE = "this machine"
TEAM_STORE = "team store"
TEAM_READ_ONLY = (
    "This request waits on {where}, in Run {run} of the repository {repository}. It is "
    "read-only here: a verdict settles the state of the machine whose Run asked for it, and "
    "its claim and its Human tools live there too. Review it on that machine "
    "(artifactize web or artifactize review there). Or run artifactize verify --wait on the "
    "same change here and sign off the request it asks: with a team-store token that has "
    "the human scope, your verdict is published, and the waiting verify there reuses it "
    "(when its token can read the store)."
)


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def request_url(request_id: str, action: str = "") -> str:
    base = f"/request/{quote(request_id, safe='')}"
    return f"{base}/{action}" if action else base


def team_url(request_id: str) -> str:
    return f"/team/{quote(request_id, safe='')}"


def where_text(view: Mapping[str, Any]) -> str:
    """Where a request waits: this machine, or the team store with the announcing machine
    and the token that announced it."""
    team = view.get("team")
    if not isinstance(team, Mapping):
        return THIS_MACHINE
    machine, publisher = team.get("machine"), team.get("publisher")
    return f"{TEAM_STORE}: {machine} ({publisher})" if machine else f"{TEAM_STORE}: {publisher}"


def view_url(request_id: str, path: str, action: str = "view") -> str:
    return f"{request_url(request_id, action)}?{urlencode({'path': path})}"


def page(title: str, waiting: int | str, body: str, reviewer: str) -> str:
    """The whole document: ``(N)`` first in the title, N the waiting requests."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>({waiting}) {esc(title)} · {APP_NAME}</title>"
        '<link rel="stylesheet" href="/static/web.css">'
        '<script src="/static/web.js" defer></script></head><body>'
        '<header><nav aria-label="Main"><a href="/">Inbox</a> '
        '<a href="/monitor">Monitor</a></nav>'
        f'<p class="who">Reviewer <strong>{esc(reviewer)}</strong></p></header>'
        f"<main>{body}</main></body></html>"
    )


def csrf_input(csrf: str) -> str:
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">'


def alert(messages: Sequence[str]) -> str:
    """Messages about the last action, read out when they appear."""
    inner = "".join(f"<p>{esc(line)}</p>" for line in messages)
    return f'<div role="alert" id="alert" class="alert">{inner}</div>'


# --- inbox ---------------------------------------------------------------------------------


def inbox_table(
    views: Sequence[Mapping[str, Any]],
    reviewer: str,
    now: datetime,
    filters: Mapping[str, str],
    notice: str | None = None,
) -> str:
    """The table of waiting requests (this machine's and the team store's, each marked in
    the ``Where`` column), filtered; ``notice`` (the team store's trouble) above it."""
    text = filters.get("q", "").strip().lower()
    claim = filters.get("claim", "")
    rows: list[str] = []
    for view in views:
        name = claimant(view)
        if claim == "unclaimed" and name is not None:
            continue
        if claim == "mine" and name != reviewer:
            continue
        if claim == "others" and (name is None or name == reviewer):
            continue
        artifact = str(view.get("evalId", "")).split("/", 1)[0]
        if text and text not in str(view.get("evalId", "")).lower():
            continue
        since = (view.get("claim") or {}).get("claimedAt")
        request_id = str(view.get("id"))
        url = team_url(request_id) if view.get("team") else request_url(request_id)
        rows.append(
            "<tr>"
            f'<td><a href="{esc(url)}">{esc(view.get("evalId"))}</a></td>'
            f"<td>{esc(artifact)}</td>"
            f"<td>{esc(view.get('title') or '')}</td>"
            f"<td>{esc(name or '–')}</td>"
            f"<td>{esc(age_text(since, now) + ' ago' if since else '–')}</td>"
            f"<td>{esc(age_text(view.get('createdAt'), now))}</td>"
            f"<td>{esc(where_text(view))}</td>"
            "</tr>"
        )
    table = (
        '<table aria-label="Waiting requests"><thead><tr><th scope="col">Eval</th>'
        '<th scope="col">Artifact</th><th scope="col">Title</th><th scope="col">Claimed by</th>'
        '<th scope="col">Claimed</th><th scope="col">Waiting</th>'
        '<th scope="col">Where</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else f"<p>{esc(NO_WAITING)}</p>"
    )
    if notice:
        table = f'<p class="notice" role="status">{esc(notice)}</p>{table}'
    return table


def inbox(filters: Mapping[str, str], table: str) -> str:
    """The waiting requests with their filters: ``table`` (``inbox_table``'s) follows the
    state live."""
    claim = filters.get("claim", "")
    options = "".join(
        f'<option value="{value}"{" selected" if value == claim else ""}>{label}</option>'
        for value, label in (
            ("", "any"),
            ("unclaimed", "unclaimed"),
            ("mine", "claimed by me"),
            ("others", "claimed by others"),
        )
    )
    form = (
        '<form method="get" action="/" class="filters" role="search" aria-label="Filters">'
        f'<label for="q">Eval</label><input id="q" name="q" value="{esc(filters.get("q", ""))}">'
        f'<label for="claim">Claim</label><select id="claim" name="claim">{options}</select>'
        "<button>Filter</button></form>"
    )
    live = "/inbox/events" + (f"?{urlencode(dict(filters))}" if filters else "")
    return f'<h1>Waiting reviews</h1>{form}<div data-live="{esc(live)}">{table}</div>'


def team_request(view: Mapping[str, Any], now: datetime) -> str:
    """An announced request of another machine: what is known of it, read-only, and where
    to act instead."""
    team = view.get("team") or {}
    claim = view.get("claim") or {}
    claimed = (
        f"Claimed by {claim.get('reviewer')} {age_text(claim.get('claimedAt'), now)} ago."
        if claim
        else "Not claimed."
    )
    sentence = TEAM_READ_ONLY.format(
        where=where_text(view), run=view.get("runId"), repository=team.get("repository")
    )
    return (
        f"<h1>{esc(view.get('evalId'))}</h1>"
        f"<p>{esc(view.get('title') or '')}</p>"
        f'<p role="note" class="read-only">{esc(sentence)}</p>'
        f"<p>Request {esc(view.get('id'))}, waiting for "
        f"{esc(age_text(view.get('createdAt'), now))}. {esc(claimed)}</p>"
    )


# --- a request -----------------------------------------------------------------------------


def markdown(text: str) -> str:
    """CommonMark with raw HTML off: tags show as text, links are validated by markdown-it
    (no ``javascript:``/``vbscript:``/``data:`` other than images)."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark", {"html": False}).render(text))


def status_section(
    view: Mapping[str, Any], reviewer: str, now: datetime, run_status: str | None
) -> str:
    """Where the request stands: status, claim, and once settled the verdict and result."""
    status = str(view.get("status"))
    name = claimant(view)
    claim = view.get("claim") or {}
    if name is None:
        claim_line = "Not claimed."
    else:
        you = " (you)" if name == reviewer else ""
        since = age_text(claim.get("claimedAt"), now)
        claim_line = f"Claimed by {name}{you} {since} ago."
    lines = [f"<p>Status <strong>{esc(status)}</strong> {esc(glyph(status))}</p>"]
    if status == RequestStatus.WAITING_HUMAN:
        lines.append(f"<p>{esc(claim_line)}</p>")
    else:
        by = view.get("reviewer") or view.get("endedBy")
        if by:
            lines.append(f"<p>Settled by {esc(by)} at {esc(view.get('completedAt') or '')}.</p>")
        if view.get("result") is not None:
            result = json.dumps(view.get("result"), indent=2, ensure_ascii=False)
            lines.append(f'<pre aria-label="Result">{esc(result)}</pre>')
        if view.get("error"):
            lines.append(
                f"<p>Error: {esc(view.get('errorCode') or '')} {esc(view.get('error'))}</p>"
            )
    if run_status is not None:
        lines.append(f"<p>Run {esc(view.get('runId'))}: {esc(run_status)}</p>")
    return "".join(lines)


def tool_log(log: ToolLog) -> str:
    rows: list[str] = []
    for row in log.rows():
        stream = ' data-stream="stderr"' if row.kind is RowKind.STDERR else ""
        kind = row.kind.value
        rows.append(f'<div class="row {kind}"{stream}>{esc(row.text)}</div>')
    return "".join(rows)


def _tools(
    request_id: str,
    tools: Sequence[ToolInfo],
    commands: Mapping[str, Mapping[str, Any]],
    can_act: bool,
    csrf: str,
) -> str:
    if not tools:
        return f"<p>{esc(NO_TOOLS)}</p>"
    items: list[str] = []
    disabled = "" if can_act else " disabled"
    for tool in tools:
        command = commands.get(tool.name)
        if tool.builtin:
            line = f"built-in: {tool.declared}"
        elif command is not None and "error" in command:
            line = f"cannot resolve: {command['error']}"
        elif command is not None:
            line = f"$ {resolved_line(command)}"
        else:
            line = f"declared: {tool.declared}"
        items.append(
            f'<li><form method="post" action="{esc(request_url(request_id, "tool"))}" '
            'class="tool" data-async>'
            f'{csrf_input(csrf)}<input type="hidden" name="tool" value="{esc(tool.name)}">'
            f"<button{disabled}>{esc(tool.name)}</button> "
            f'<span class="kind">[{esc(tool.kind)}]</span> {esc(tool.description)}'
            f"<br><code>{esc(line)}</code></form></li>"
        )
    note = "" if can_act else f"<p>{esc(CLAIM_FIRST)}</p>"
    stop = (
        f'<form method="post" action="{esc(request_url(request_id, "stop"))}" data-async>'
        f"{csrf_input(csrf)}<button>Stop running tools</button></form>"
        if can_act
        else ""
    )
    return f'{note}<ul class="tools">{"".join(items)}</ul>{stop}'


def _actions(request_id: str, view: Mapping[str, Any], reviewer: str, csrf: str) -> str:
    if view.get("status") != RequestStatus.WAITING_HUMAN:
        return ""
    name = claimant(view)
    parts: list[str] = []
    if name is None:
        parts.append(
            f'<form method="post" action="{esc(request_url(request_id, "claim"))}">'
            f"{csrf_input(csrf)}<button>Claim</button></form>"
        )
    if name == reviewer:
        parts.append(
            '<button type="button" data-dialog="unclaim-dialog">Unclaim</button>'
            '<dialog id="unclaim-dialog" aria-labelledby="unclaim-title">'
            f'<form method="post" action="{esc(request_url(request_id, "unclaim"))}">'
            f'{csrf_input(csrf)}<h2 id="unclaim-title">Release your claim?</h2>'
            "<p>The request keeps waiting; anyone may claim it.</p>"
            '<button>Confirm</button> <button type="button" data-close>Back</button>'
            "</form></dialog>"
        )
    if name is None or name == reviewer:
        parts.append(
            '<button type="button" data-dialog="cancel-dialog">Cancel request</button>'
            '<dialog id="cancel-dialog" aria-labelledby="cancel-title">'
            f'<form method="post" action="{esc(request_url(request_id, "cancel"))}">'
            f'{csrf_input(csrf)}<h2 id="cancel-title">Cancel this request?</h2>'
            "<p>It ends CANCELLED, without a verdict.</p>"
            '<label for="reason">Reason</label> <input id="reason" name="reason">'
            '<button>Confirm</button> <button type="button" data-close>Back</button>'
            "</form></dialog>"
        )
    return f'<div class="actions">{"".join(parts)}</div>'


def _field_html(choice: VerdictChoice) -> str:
    verdict = choice.verdict
    if choice.form is None:
        return _control(
            verdict,
            JSON_FIELD,
            "JSON of the owner fields (the form cannot express this schema)",
            lambda attrs: (
                f'<textarea id="{esc(input_name(verdict, JSON_FIELD))}" '
                f'name="{esc(input_name(verdict, JSON_FIELD))}" rows="8"{attrs}>'
                f"{esc(choice.json_text)}</textarea>"
            ),
            choice.errors.get(JSON_FIELD),
        )
    fields = {item.name: item for item in choice.form.fields}
    parts: list[str] = []
    for name in choice.order:
        ident = esc(input_name(verdict, name))
        array = choice.arrays.get(name)
        if array is not None:
            control = _lines_control(ident, array.text)
            parts.append(_control(verdict, name, array.hint, control, choice.errors.get(name)))
            continue
        item = fields.get(name)
        if item is None:
            continue
        if item.kind is FieldKind.CONST:
            value = json.dumps(item.const, ensure_ascii=False)
            control = _const_control(ident, value)
        elif item.kind in (FieldKind.CHOICE, FieldKind.BOOLEAN):
            values = item.choices if item.kind is FieldKind.CHOICE else ("true", "false")
            current = item.shown()
            options = [f'<option value="{UNSET_OPTION}">{esc(UNSET_LABEL)}</option>']
            options += [
                f'<option value="{esc(v)}"{" selected" if v == current else ""}>{esc(v)}</option>'
                for v in values
            ]
            control = _select_control(ident, "".join(options))
        else:
            mode = ' inputmode="decimal"' if item.kind is not FieldKind.STRING else ""
            control = _text_control(ident, item.text, mode)
        parts.append(_control(verdict, item.name, item.hint, control, choice.errors.get(name)))
    return "".join(parts)


Control = Callable[[str], str]  # the control's element, given its aria attributes


def _const_control(ident: str, value: str) -> Control:
    return lambda attrs: f'<input id="{ident}" value="{esc(value)}" readonly{attrs}>'


def _select_control(ident: str, options: str) -> Control:
    return lambda attrs: f'<select id="{ident}" name="{ident}"{attrs}>{options}</select>'


def _text_control(ident: str, text: str, mode: str) -> Control:
    return lambda attrs: f'<input id="{ident}" name="{ident}" value="{esc(text)}"{mode}{attrs}>'


def _lines_control(ident: str, text: str) -> Control:
    return lambda attrs: (
        f'<textarea id="{ident}" name="{ident}" rows="4"{attrs}>{esc(text)}</textarea>'
    )


def _control(verdict: str, name: str, hint: str, control: Control, error: str | None) -> str:
    ident = input_name(verdict, name)
    hint_id, error_id = f"{ident}-hint", f"{ident}-error"
    described = f"{error_id} {hint_id}" if error else hint_id
    attrs = f' aria-describedby="{esc(described)}"'
    if error:
        attrs += ' aria-invalid="true"'
    message = f'<p class="error" id="{esc(error_id)}">{esc(error)}</p>' if error else ""
    return (
        f'<div class="field"><label for="{esc(ident)}">{esc(name)}</label>'
        f"{control(attrs)}"
        f'<p class="hint" id="{esc(hint_id)}">{esc(hint)}</p>{message}</div>'
    )


def verdict_form(
    request_id: str, choices: Mapping[str, VerdictChoice], chosen: str | None, csrf: str
) -> str:
    radios = "".join(
        f'<label><input type="radio" name="verdict" value="{v}"'
        f"{' checked' if v == chosen else ''}> {v}</label> "
        for v in choices
    )
    groups = "".join(
        f'<fieldset class="owner" data-verdict="{esc(v)}"'
        f"{'' if chosen in (None, v) else ' hidden'}>"
        f"<legend>{esc(v)} fields</legend>{_field_html(choice) or '<p>No fields.</p>'}</fieldset>"
        for v, choice in choices.items()
    )
    return (
        f'<form method="post" action="{esc(request_url(request_id, "submit"))}" novalidate '
        'aria-labelledby="verdict-title" class="verdict">'
        f'<h2 id="verdict-title">Verdict</h2>{csrf_input(csrf)}'
        f'<fieldset role="radiogroup" aria-label="Verdict"><legend>Verdict</legend>{radios}'
        f"</fieldset>{groups}<button>Submit</button></form>"
    )


def files_list(request_id: str, files: Iterable[str], truncated: bool) -> str:
    links = [
        f'<li><a href="{esc(view_url(request_id, path))}">{esc(path)}</a></li>' for path in files
    ]
    if not links:
        return f"<p>{esc(NO_FILES)}</p>"
    cut = FILES_CUT.format(count=VIEW_FILES_MAX, depth=VIEW_DEPTH_MAX)
    cut = f"<p>{esc(cut)}</p>" if truncated else ""
    return f'<ul class="files">{"".join(links)}</ul>{cut}'


def changed_list(request_id: str, since: SinceLastVerdict) -> str:
    """The files changed since the last verdict of this eval, each a link to its viewer;
    "not recorded" when either side saved no per-file manifest."""
    last = since.verdict
    if last is None:
        return f"<p>{esc(NO_EARLIER_VERDICT)}</p>"
    when = f"{last.status} of Run {last.data.run_id or '?'}, {last.completed_at or ''}"
    if since.changes is None:
        return f"<p>Since the last verdict ({esc(when)}): {esc(NOT_RECORDED)}.</p>"
    if not since.changes:
        return f"<p>Nothing changed since the last verdict ({esc(when)}).</p>"
    items = "".join(
        f"<li>{esc(path)} {esc(how)}</li>"
        if how == REMOVED
        else f'<li><a href="{esc(view_url(request_id, path))}">{esc(path)}</a> {esc(how)}</li>'
        for path, how in since.changes
    )
    return f"<p>Since the last verdict ({esc(when)}):</p><ul>{items}</ul>"


def request_page(
    view: Mapping[str, Any],
    reviewer: str,
    now: datetime,
    tools: Sequence[ToolInfo],
    commands: Mapping[str, Mapping[str, Any]],
    log: ToolLog,
    choices: Mapping[str, VerdictChoice],
    chosen: str | None,
    messages: Sequence[str],
    files_html: str,
    changed_html: str,
    csrf: str,
    run_status: str | None,
) -> str:
    request_id = str(view.get("id"))
    payload = view.get("payload") or {}
    definition = view.get("humanDefinition") or {}
    scope = sorted((definition.get("artifacts") or {}).keys())
    waiting = view.get("status") == RequestStatus.WAITING_HUMAN
    can_act = waiting and claimant(view) == reviewer
    instruction = str(payload.get("instruction") or "")
    form = verdict_form(request_id, choices, chosen, csrf) if can_act else ""
    return (
        f"<h1>{esc(view.get('evalId'))}</h1>"
        f"<p>{esc(view.get('title') or '')} · Request {esc(request_id)} · Run "
        f'<a href="/monitor/run/{esc(quote(str(view.get("runId")), safe=""))}">'
        f"{esc(view.get('runId'))}</a></p>"
        f"{alert(messages)}"
        f'<section aria-labelledby="state-title"><h2 id="state-title">State</h2>'
        f'<div data-live="{esc(request_url(request_id, "state"))}">'
        f"{status_section(view, reviewer, now, run_status)}</div>"
        f"{_actions(request_id, view, reviewer, csrf)}</section>"
        f'<section aria-labelledby="instruction-title"><h2 id="instruction-title">Instruction</h2>'
        f'<div class="markdown">{markdown(instruction)}</div></section>'
        f'<section aria-labelledby="scope-title"><h2 id="scope-title">Scope</h2>'
        f"<p>Artifacts: {esc(', '.join(scope) or '–')} · Repository "
        f"<code>{esc(definition.get('repo') or '')}</code></p>"
        f"<h3>Files</h3>{files_html}<h3>Changed</h3>{changed_html}</section>"
        f'<section aria-labelledby="tools-title"><h2 id="tools-title">Human tools</h2>'
        f"{_tools(request_id, tools, commands, can_act, csrf)}"
        f'<div role="log" aria-label="Tool log" id="tool-log" '
        f'data-live="{esc(request_url(request_id, "log"))}">{tool_log(log)}</div></section>'
        f"{form}"
    )


# --- viewers -------------------------------------------------------------------------------


def text_viewer(text: str) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = "".join(
        f'<tr><td class="ln">{number}</td><td><code>{esc(line)}</code></td></tr>'
        for number, line in enumerate(lines, start=1)
    )
    return f'<table class="text" aria-label="Text with line numbers"><tbody>{rows}</tbody></table>'


def viewer_page(request_id: str, eval_id: str, path: str, body: str, kind: str) -> str:
    back = f'<p><a href="{esc(request_url(request_id))}">Back to {esc(eval_id)}</a></p>'
    other = ""
    if kind == "markdown":
        other = f' · <a href="{esc(view_url(request_id, path))}&amp;as=text">As text</a>'
    return f"{back}<h1>{esc(path)}</h1><p>{esc(kind)} view{other}</p>{body}"


def image_viewer(request_id: str, path: str) -> str:
    return f'<img class="image" src="{esc(view_url(request_id, path, "raw"))}" alt="{esc(path)}">'


# --- monitor -------------------------------------------------------------------------------


def runs_table(rows: Sequence[RunRow], now: datetime) -> str:
    if not rows:
        return f"<p>{esc(NO_RUNS)}</p>"
    body = "".join(
        "<tr>"
        f'<td><a href="/monitor/run/{esc(quote(row.run_id, safe=""))}">{esc(row.run_id)}</a></td>'
        f"<td>{esc(glyph(row.status))} {esc(row.status)}</td>"
        f"<td>{esc(counts_text(row.counts))}</td>"
        f"<td>{esc(age_text(row.created_at, now))}</td><td>{esc(row.repo)}</td></tr>"
        for row in rows
    )
    return (
        '<table aria-label="Runs"><thead><tr><th scope="col">Run</th><th scope="col">Status</th>'
        '<th scope="col">Requests</th><th scope="col">Age</th><th scope="col">Repository</th>'
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


def run_header_html(run: Mapping[str, Any], requests: Sequence[Request], now: datetime) -> str:
    return "".join(f"<p>{esc(line)}</p>" for line in run_header(run, requests, now))


def run_page_body(header: str, tree: str) -> str:
    return f'<div class="header">{header}</div>{tree}'


def run_tree(run: Mapping[str, Any], requests: Sequence[Request]) -> str:
    """The Run's Artifact/eval tree as nested lists (a waiting Human eval links to its
    page); it depends on the read alone, the header (``run_header_html``) on the clock too."""
    by_id = {str(r.id): r for r in requests}

    def node_html(node: TreeNode) -> str:
        request = by_id.get(node.key)
        label = esc(node.label.strip())
        if request is not None and node.status == RequestStatus.WAITING_HUMAN:
            label = f'{label} · <a href="{esc(request_url(node.key))}">{esc(request.eval_id)}</a>'
        inner = "".join(node_html(child) for child in node.children)
        children = f"<ul>{inner}</ul>" if inner else ""
        return f'<li class="{esc(node.kind)}">{label}{children}</li>'

    tree = "".join(node_html(node) for node in build_tree(run, requests))
    return f'<ul class="tree" aria-label="Run tree">{tree}</ul>'
