"""The one place the domain's frozen documents meet their saved camelCase JSON.

The state store (and whatever writes a document out: a team store record, ``--json``)
converts here, and only here: :func:`execution_from_json` reads an execution's JSON object
into :class:`~artifactize.ports.documents.Execution`, :func:`execution_json` writes it back;
:func:`run_from_json` and :func:`run_json` do the same for a
:class:`~artifactize.ports.documents.Run` (changed with :func:`run_changed`), and
:func:`request_from_json` and :func:`request_json` for a
:class:`~artifactize.ports.documents.Request` (changed with :func:`request_changed`).
The conversion is byte-compatible: a document read and written again serializes to the same
bytes (key order, explicit nulls and keys this version does not know are kept), so stored
state, store records and every ``--json`` output read exactly as before.

Each document class has defaults for every field: a key a document lacks reads as its
field's default and is not written back; a field not among the document's saved ``keys``
is written, after them, once it holds something other than its default.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from artifactize.ports.documents import Execution, Request, Run
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    class _Keyed(DataclassInstance, Protocol):
        """A frozen document: its saved keys in order, and those it does not model."""

        @property
        def extra(self) -> Mapping[str, Any]: ...

        @property
        def keys(self) -> tuple[str, ...]: ...


Document = TypeVar("Document", bound="_Keyed")
Fields = ParamSpec("Fields")

_BOOKKEEPING = frozenset({"extra", "keys"})
# Distinct saved-key layouts whose unlisted fields a codec remembers (documents share a
# handful: a new request's, a settled one's, a Run's before and after it ends).
_LAYOUTS_MAX = 256


@functools.cache  # a field's name: a few dozen in all, each changed thousands of times a Run
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _rebuildable(kind: type) -> bool:
    """Whether ``kind(*every field's value)`` builds what ``dataclasses.replace`` builds:
    every field an init field (no ``InitVar``: those are no fields) and no
    ``__post_init__`` to run again."""
    every = dataclasses.fields(kind)
    return all(item.init for item in every) and not hasattr(kind, "__post_init__")


class DocumentError(ValueError):
    """A saved document this version cannot read (names the document and the rule)."""


class _Codec(Generic[Document]):
    """The JSON of one frozen document class: its fields by camelCase key, their defaults,
    the enum of its ``status`` and the word that names it in an error."""

    def __init__(self, kind: type[Document], statuses: type[enum.StrEnum], noun: str) -> None:
        self.kind = kind
        self.statuses = statuses
        self.noun = noun
        self.fields = {
            _camel(item.name): item.name
            for item in dataclasses.fields(kind)
            if item.name not in _BOOKKEEPING
        }
        self.defaults = kind()
        # Each field's key, name and default: what ``write`` compares a field not saved with.
        self.defaulted = tuple(
            (key, name, getattr(self.defaults, name)) for key, name in self.fields.items()
        )
        self._layouts: dict[tuple[str, ...], tuple[bool, tuple[tuple[str, str, Any], ...]]] = {}
        # A change builds the document again from its fields' values, positionally: one
        # C-level read of every field and one constructor call, what ``dataclasses.replace``
        # does with a Python loop over the fields and keyword arguments (about half its
        # time for a request's 46 fields; two changes per settled request). Equal only for
        # a class whose every field is an init field and that has no ``__post_init__``,
        # which the documents are (``_rebuildable`` checks it; otherwise ``replace``).
        names = [item.name for item in dataclasses.fields(kind)]
        self._position = {name: index for index, name in enumerate(names)}
        self._values = operator.attrgetter(*names) if _rebuildable(kind) else None

    def _layout(self, keys: tuple[str, ...]) -> tuple[bool, tuple[tuple[str, str, Any], ...]]:
        """For a document saved with ``keys``: whether each is a field's key, and the fields
        it does not list (key, name, default), in field order: the ones written after them
        once they hold something other than their default. Remembered per layout."""
        found = self._layouts.get(keys)
        if found is None:
            listed = set(keys)
            found = (
                listed <= self.fields.keys(),
                tuple(entry for entry in self.defaulted if entry[0] not in listed),
            )
            if len(self._layouts) < _LAYOUTS_MAX:
                self._layouts[keys] = found
        return found

    def read(self, data: Mapping[str, Any]) -> Document:
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        fields = self.fields
        for key, value in data.items():
            name = fields.get(key)
            if name is None:
                extra[key] = value
            elif name == "status":
                values[name] = self.status(value, data.get("id"))
            else:
                values[name] = value
        values["extra"], values["keys"] = extra, tuple(data)
        return self.kind(**values)

    def write(self, document: Document) -> dict[str, Any]:
        written: dict[str, Any] = {}
        extra = document.extra
        fields = self.fields
        for key in document.keys:
            name = fields.get(key)
            if name is not None:
                written[key] = getattr(document, name)
            elif key in extra:
                written[key] = extra[key]
        for key, name, default in self._layout(document.keys)[1]:  # the fields not listed
            value = getattr(document, name)
            if value != default:
                written[key] = value
        for key, value in extra.items():
            written.setdefault(key, value)
        return written

    def written_keys(self, document: Document) -> list[str]:
        """The keys of ``write(document)``, in its order, without reading the values of
        the keys the document holds (``write`` reads every one)."""
        extra = document.extra
        fields = self.fields
        every_field, unlisted = self._layout(document.keys)
        if every_field:
            written = dict.fromkeys(document.keys)
        else:
            written = dict.fromkeys(k for k in document.keys if k in fields or k in extra)
        for key, name, default in unlisted:
            if getattr(document, name) != default:
                written[key] = None
        for key in extra:
            written.setdefault(key)
        return list(written)

    def changed(self, document: Document, changes: dict[str, Any]) -> Document:
        if "status" in changes:
            changes["status"] = self.status(changes["status"], getattr(document, "id", None))
        keys = tuple(dict.fromkeys((*self.written_keys(document), *map(_camel, changes))))
        return self._replaced(document, {**changes, "keys": keys})

    def changed_deriving(
        self, document: Document, changes: dict[str, Any], name: str, derive: Callable[[Any], Any]
    ) -> Document:
        """``changed(changed(document, changes), {name: derive(that)})``, built once: the
        document is built with ``name``'s change written as None, then ``name`` is set to
        ``derive(built)`` before anything else holds it (``object.__setattr__``, as a frozen
        dataclass's own ``__post_init__`` sets a field). The saved keys are those of the two
        changes (``name``'s key keeps its place, or follows ``changes``'). ``derive`` must
        not read ``name`` itself (it would read None, not the value before the change)."""
        if name in changes or name not in self._position:
            raise TypeError(f"{self.kind.__name__}: {name!r} is derived, not changed")
        built = self.changed(document, {**changes, name: None})
        object.__setattr__(built, name, derive(built))
        return built

    def holds(self, document: Document, changes: Mapping[str, Any]) -> bool:
        """Whether ``changed(document, changes)`` would equal ``document``: each field
        already equal to its change, and the saved keys already those the change writes
        (no document is built to find out)."""
        if any(getattr(document, name) != value for name, value in changes.items()):
            return False
        keys = tuple(dict.fromkeys((*self.written_keys(document), *map(_camel, changes))))
        return keys == document.keys

    def merged(self, document: Document, fields: Mapping[str, Any]) -> Document:
        values: dict[str, Any] = {}
        extra = dict(document.extra)
        for key, value in fields.items():
            name = self.fields.get(key)
            if name is None:
                extra[key] = value
            else:
                values[name] = value
        if "status" in values:
            values["status"] = self.status(values["status"], getattr(document, "id", None))
        keys = tuple(dict.fromkeys((*self.written_keys(document), *fields)))
        # one ``replace`` (each builds the whole document again), as ``changed`` then a
        # second ``replace`` for ``extra`` and a third for ``keys`` would leave it
        return self._replaced(document, {**values, "extra": extra, "keys": keys})

    def _replaced(self, document: Document, changes: Mapping[str, Any]) -> Document:
        """``dataclasses.replace(document, **changes)``: the same document (every field's
        value, ``changes`` over ``document``'s), built positionally; a name that is no field
        is refused as ``replace`` refuses it (TypeError)."""
        if self._values is None:
            return dataclasses.replace(document, **changes)
        values = list(self._values(document))
        position = self._position
        for name, value in changes.items():
            index = position.get(name)
            if index is None:
                raise TypeError(f"{self.kind.__name__} has no field {name!r}")
            values[index] = value
        return self.kind(*values)

    def status(self, value: Any, identifier: object) -> Any:
        if value is None and getattr(self.defaults, "status", None) is None:
            return None  # an execution just claimed has none yet
        try:
            return self.statuses(value)
        except ValueError:
            raise DocumentError(
                f"{self.noun} {identifier!s} has no known status: {value!r}"
            ) from None


_EXECUTIONS = _Codec(Execution, ExecutionStatus, "execution")
_RUNS = _Codec(Run, RunStatus, "Run")
_REQUESTS = _Codec(Request, RequestStatus, "request")


_SHARED_JSON_TYPES = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """What ``copy.deepcopy`` gives for a JSON value, without its memo and dispatch (a
    settlement's fields cost ~17 µs through it, a few through this): plain dicts and lists
    copied all the way down, strings, numbers, booleans, None and enum members (a verdict)
    shared, as ``copy.deepcopy`` shares them; any other value through ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {name: json_copy(item) for name, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind in _SHARED_JSON_TYPES or isinstance(value, enum.Enum):  # deepcopy shares members
        return value
    return copy.deepcopy(value)


def execution_from_json(data: Mapping[str, Any]) -> Execution:
    """The execution ``data`` (its saved JSON object) holds; DocumentError for a status no
    execution has. The values are taken as they are (not copied): the caller hands over a
    freshly parsed object."""
    return _EXECUTIONS.read(data)


def execution_json(execution: Execution) -> dict[str, Any]:
    """The saved JSON object of ``execution``: its ``keys`` in their order, then each field
    set since (in the order of the fields), then ``extra`` keys not among them."""
    return _EXECUTIONS.write(execution)


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
    return _EXECUTIONS.merged(execution, fields)


def run_from_json(data: Mapping[str, Any]) -> Run:
    """The Run ``data`` (its saved JSON object) holds; DocumentError for a status no Run
    has. The values are taken as they are (not copied): the caller hands over a freshly
    parsed object. A key it lacks reads as the field's default and is not written back."""
    return _RUNS.read(data)


def run_json(run: Run) -> dict[str, Any]:
    """The saved JSON object of ``run``: its ``keys`` in their order, then each field that
    holds something other than its default (in the order of the fields), then ``extra``
    keys not among them. A fresh dict each call (shallow: the values are the Run's)."""
    return _RUNS.write(run)


def _changer(
    codec: _Codec[Document], kind: Callable[Fields, Document]
) -> Callable[Concatenate[Document, Fields], Document]:
    """The change function of ``codec``'s documents, typed by ``kind``'s own fields: mypy
    checks each change's name and value type as it checks the dataclass's constructor."""

    def change(document: Document, /, *values: Fields.args, **changes: Fields.kwargs) -> Document:
        if values:
            raise TypeError("A document's changes are named: field=value.")
        return codec.changed(document, dict(changes))

    return change


run_changed = _changer(_RUNS, Run)
"""``run_changed(run, field=value, ...)``: ``run`` with those fields changed by
``dataclasses.replace``: a key it holds keeps its place and a new one follows, as a dict
update would have it, so the saved JSON reads as before; a status no Run has is refused
(DocumentError)."""


def request_from_json(data: Mapping[str, Any]) -> Request:
    """The request ``data`` (its saved JSON object) holds, as :func:`run_from_json` reads a
    Run; DocumentError for a status no request has."""
    return _REQUESTS.read(data)


def request_json(request: Request) -> dict[str, Any]:
    """The saved JSON object of ``request``, as :func:`run_json` writes a Run."""
    return _REQUESTS.write(request)


request_changed = _changer(_REQUESTS, Request)
"""``request_changed(request, field=value, ...)``, as :data:`run_changed` changes a Run: a
new key follows the saved ones, a status no request has is refused."""


def _summarizing_changer(
    codec: _Codec[Document], kind: Callable[Fields, Document]
) -> Callable[Concatenate[Document, Callable[[Document], Any], Fields], Document]:
    """The change function of ``codec``'s documents that also writes the ``summary`` a
    function derives from the changed document, building the document once."""

    def change(
        document: Document,
        summary: Callable[[Document], Any],
        /,
        *values: Fields.args,
        **changes: Fields.kwargs,
    ) -> Document:
        if values:
            raise TypeError("A document's changes are named: field=value.")
        return codec.changed_deriving(document, dict(changes), "summary", summary)

    return change


request_summarized = _summarizing_changer(_REQUESTS, Request)
"""``request_summarized(request, summary, field=value, ...)``: what
``request_changed(changed, summary=summary(changed))`` gives for
``changed = request_changed(request, field=value, ...)`` (the same fields, saved keys and
bytes), with one document built instead of two: a settled request is saved with its
summary, computed from the settled document. ``summary`` must not read the request's own
``summary`` (it reads None there)."""


def request_holds(request: Request, /, **changes: Any) -> bool:
    """Whether ``request_changed(request, **changes)`` would equal ``request`` (so saving it
    again would write nothing new), without building the changed document."""
    return _REQUESTS.holds(request, changes)


def request_merged(request: Request, fields: Mapping[str, Any]) -> Request:
    """``request`` with ``fields`` (camelCase JSON keys: what a settlement shares with its
    execution, what a follower takes from the execution it waits on) written over it, as
    :func:`execution_changed` writes over an execution."""
    return _REQUESTS.merged(request, fields)
