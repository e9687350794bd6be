"""The one place the domain's frozen documents meet their saved camelCase JSON.

The state store (and whatever writes a document out: a team store record, ``--json``)
converts here, and only here: :func:`execution_from_json` reads an execution's JSON object
into :class:`~artifactize.ports.documents.Execution`, :func:`execution_json` writes it back;
:func:`run_from_json` and :func:`run_json` do the same for a
:class:`~artifactize.ports.documents.Run`, which the domain changes with :func:`run_changed`.
The conversion is byte-compatible: a document read and written again serializes to the same
bytes (key order, explicit nulls and keys this version does not know are kept), so stored
state, store records and every ``--json`` output read exactly as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from artifactize.ports.documents import Execution, Run
from artifactize.ports.statuses import ExecutionStatus, RunStatus

_BOOKKEEPING = frozenset({"extra", "keys"})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_EXECUTION_FIELDS: dict[str, str] = {
    _camel(item.name): item.name
    for item in dataclasses.fields(Execution)
    if item.name not in _BOOKKEEPING
}


class DocumentError(ValueError):
    """A saved document this version cannot read (names the document and the rule)."""


def execution_from_json(data: Mapping[str, Any]) -> Execution:
    """The execution ``data`` (its saved JSON object) holds; DocumentError for a status no
    execution has. The values are taken as they are (not copied): the caller hands over a
    freshly parsed object."""
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        name = _EXECUTION_FIELDS.get(key)
        if name is None:
            extra[key] = value
        elif name == "status":
            values[name] = _status(value, data)
        else:
            values[name] = value
    return Execution(**values, extra=extra, keys=tuple(data))


def execution_json(execution: Execution) -> dict[str, Any]:
    """The saved JSON object of ``execution``: its ``keys`` in their order, then each field
    set since (in the order of the fields), then ``extra`` keys not among them."""
    document: dict[str, Any] = {}
    for key in execution.keys:
        name = _EXECUTION_FIELDS.get(key)
        if name is not None:
            document[key] = getattr(execution, name)
        elif key in execution.extra:
            document[key] = execution.extra[key]
    for key, name in _EXECUTION_FIELDS.items():
        if key not in document:
            value = getattr(execution, name)
            if value is not None:
                document[key] = value
    for key, value in execution.extra.items():
        document.setdefault(key, value)
    return document


def with_keys(execution: Execution, *names: str) -> tuple[str, ...]:
    """The JSON keys ``execution`` is written with and, after them, those of the fields
    ``names`` it does not hold yet: pass it to ``dataclasses.replace`` (``keys=``) with
    fields that must be written even when None (a settlement's ``"error": null``)."""
    listed = dict.fromkeys(execution_json(execution))
    for name in names:
        listed.setdefault(_camel(name))
    return tuple(listed)


def execution_changed(execution: Execution, fields: Mapping[str, Any]) -> Execution:
    """``execution`` with ``fields`` (camelCase JSON keys: what a settlement shares with its
    request document) written over it by ``dataclasses.replace``: a key it holds keeps its
    place and a new one follows, as a dict update would have it, None included."""
    values: dict[str, Any] = {}
    extra = dict(execution.extra)
    for key, value in fields.items():
        name = _EXECUTION_FIELDS.get(key)
        if name is None:
            extra[key] = value
        else:
            values[name] = _status(value, execution) if name == "status" else value
    keys = tuple(dict.fromkeys((*execution_json(execution), *fields)))
    return dataclasses.replace(execution, **values, extra=extra, keys=keys)


def _status(value: Any, execution: Execution | Mapping[str, Any]) -> ExecutionStatus | None:
    if value is None:
        return None
    try:
        return ExecutionStatus(value)
    except ValueError:
        identifier = execution.get("id") if isinstance(execution, Mapping) else execution.id
        raise DocumentError(f"execution {identifier!s} has no known status: {value!r}") from None


_RUN_FIELDS: dict[str, str] = {
    _camel(item.name): item.name
    for item in dataclasses.fields(Run)
    if item.name not in _BOOKKEEPING
}
_RUN_DEFAULTS: Run = Run()


def run_from_json(data: Mapping[str, Any]) -> Run:
    """The Run ``data`` (its saved JSON object) holds; DocumentError for a status no Run
    has. The values are taken as they are (not copied): the caller hands over a freshly
    parsed object. A key it lacks reads as the field's default and is not written back."""
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        name = _RUN_FIELDS.get(key)
        if name is None:
            extra[key] = value
        elif name == "status":
            values[name] = _run_status(value, data.get("id"))
        else:
            values[name] = value
    return Run(**values, extra=extra, keys=tuple(data))


def run_json(run: Run) -> dict[str, Any]:
    """The saved JSON object of ``run``: its ``keys`` in their order, then each field that
    holds something other than its default (in the order of the fields), then ``extra``
    keys not among them. A fresh dict each call (shallow: the values are the Run's)."""
    document: dict[str, Any] = {}
    extra = run.extra
    for key in run.keys:
        name = _RUN_FIELDS.get(key)
        if name is not None:
            document[key] = getattr(run, name)
        elif key in extra:
            document[key] = extra[key]
    if len(document) < len(_RUN_FIELDS) + len(extra):
        for key, name in _RUN_FIELDS.items():
            if key not in document:
                value = getattr(run, name)
                if value != getattr(_RUN_DEFAULTS, name):
                    document[key] = value
        for key, value in extra.items():
            document.setdefault(key, value)
    return document


def run_changed(run: Run, **changes: Any) -> Run:
    """``run`` with ``changes`` (its fields, by name) made by ``dataclasses.replace``: a key
    it holds keeps its place and a new one follows, as a dict update would have it, so the
    saved JSON reads as before; a status no Run has is refused (DocumentError), a name it has
    no field for too (TypeError, from ``dataclasses.replace``)."""
    if "status" in changes:
        changes["status"] = _run_status(changes["status"], run.id)
    keys = tuple(dict.fromkeys((*run_json(run), *map(_camel, changes))))
    return dataclasses.replace(run, **changes, keys=keys)


def _run_status(value: Any, run_id: object) -> RunStatus:
    try:
        return RunStatus(value)
    except ValueError:
        raise DocumentError(f"Run {run_id!s} has no known status: {value!r}") from None
