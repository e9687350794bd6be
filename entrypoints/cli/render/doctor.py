"""The text form of ``artifactize doctor``; its ``--json`` form is the report itself."""

from __future__ import annotations

from typing import Any

from artifactize.entrypoints.text_lists import named


def _mark(ok: bool | None) -> str:
    return "ok" if ok else "--" if ok is None else "NO"


def doctor_text(report: dict[str, Any]) -> str:
    """The doctor's report as text: each backend, the state home, the team store, the
    editor and the desktop opener, then Ready or what is not."""
    lines = []
    if not report["backends"]:
        lines.append("Agent backends: none used by this workspace")
    for item in report["backends"]:
        lines.append(f"Agent backend {item['backend']} ({named(item['evals'])}):")
        if "program" in item:  # a coding agent: its program, version and sign-in
            lines.append(
                f"  program: {item['program'] or 'not found'} (from {item['programSource']})"
            )
            lines.append(f"  version: {item['version'] or 'unknown'}")
            lines.append(
                f"  {_mark(item['ready'])} signed in: {_mark(item['signedIn'])} {item['detail']}"
            )
            continue
        if "baseUrl" not in item:
            lines.append(f"  {_mark(False)} {item.get('detail')}")
            continue
        key = item["key"]
        state = "set" if key["set"] else "unset" + (" (required)" if key["required"] else "")
        lines.append(f"  endpoint: {item['baseUrl']} (from {item['endpointSource']})")
        lines.append(f"  key: {key['variable']} {state}{_key_source(item.get('keySource'))}")
        answered = item.get("answers")
        detail = (
            f"HTTP {item.get('status')} in {item.get('seconds')} s"
            if answered
            else item.get("detail")
        )
        lines.append(f"  {_mark(item['ready'])} answers: {_mark(answered)} {detail or ''}".rstrip())
        lines.append(f"  proxy: {item['proxy'] or 'none (direct)'}")
        if item["loopbackRule"]:
            lines.append(f"  {item['loopbackRule']}")
    home = report["stateHome"]
    lines.append(
        f"{_mark(home['writable'])} state home: {home['path']}"
        + (f" ({home['detail']})" if home["detail"] else "")
    )
    store = report["teamStore"]
    if store["configured"]:
        lines.append(f"{_mark(store['reachable'])} team store: {store['url']} ({store['detail']})")
    else:
        lines.append(
            "-- team store: not configured" + (f" ({store['detail']})" if store["detail"] else "")
        )
    editor = report["editor"]
    needed = " (needed: Human evals)" if editor["needed"] else ""
    source = f"${editor['variable']}" if editor["variable"] else "default"
    lines.append(f"editor: {editor['command'] or 'none'} ({source}){needed}")
    opener = report["desktopOpener"]
    lines.append(
        f"desktop opener: {opener['path'] or opener['program'] + ' not found'}"
        + (" (needed)" if opener["needed"] else "")
    )
    lines.append("Ready." if report["ready"] else "Not ready:")
    lines.extend(f"  {problem}" for problem in report["problems"])
    return "\n".join(lines)


KEY_SOURCES = {
    "env": " (from the environment)",
    "keyring": " (saved in the OS keyring)",
    "file": " (saved in the state home's key file)",
}


def _key_source(source: str | None) -> str:
    """Where the key comes from, as ``doctor`` says it (nothing when unset)."""
    return KEY_SOURCES.get(source, "") if source else ""
