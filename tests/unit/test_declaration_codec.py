"""The stored form of a declaration (``domain/declarations/codec.py``): every model
dataclass reads back exactly (same values, same types at every depth), and a stored form of
another shape is refused, never half-read."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifactize.domain.declarations import model
from artifactize.domain.declarations.codec import (
    DECLARATION_FORMAT,
    StoredFormError,
    _codec,
    decode_declaration,
    decode_stored,
    encode_declaration,
)

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_REACHED: set[type[Any]] = set()


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of ``hint``, built from the model's type hints (as the parser would build
    them: tuples, dicts, the model's enums and classes)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str:
        return st.text()
    if hint is int:
        return st.integers()
    if hint is bool:
        return st.booleans()
    if hint is Any:
        return _JSON
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if arg is type(None) else _strategy(arg) for arg in args))
    if origin is tuple:
        return st.lists(_strategy(args[0]), max_size=3).map(tuple)
    if origin is Mapping:
        return st.dictionaries(st.text(), _strategy(args[1]), max_size=3)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    assert isinstance(hint, type) and dataclasses.is_dataclass(hint), hint
    _REACHED.add(hint)
    hints = typing.get_type_hints(hint)
    return st.builds(hint, **{f.name: _strategy(hints[f.name]) for f in dataclasses.fields(hint)})


_DECLARATIONS = _strategy(model.Declaration)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same type at every depth (``1 == True``, ``(1,) != [1]``)."""
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    return bool(a == b) or (a != a and b != b)


def test_the_strategy_reaches_every_model_dataclass() -> None:
    every = {
        cls
        for cls in vars(model).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls)
    }
    assert every == _REACHED


@given(_DECLARATIONS, st.text())
def test_every_declaration_reads_back_exactly(declaration: model.Declaration, text: str) -> None:
    stored = encode_declaration(declaration, text)
    assert stored is not None
    read, read_text = decode_declaration(stored)
    assert _same(read, declaration)
    assert read_text == text


@given(_DECLARATIONS)
def test_the_json_line_is_json_dumps_with_the_stored_options(
    declaration: model.Declaration,
) -> None:
    """The encoder made once writes the very bytes ``json.dumps`` wrote with these options."""
    stored = encode_declaration(declaration, "text")
    assert stored is not None
    row = _codec(model.Declaration).encode(declaration)
    expected = json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert stored.split("\n")[1] == expected


def test_encoding_builds_no_json_encoder_per_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold load encodes every declaration it parses: the JSON encoder is made once, at
    import, not once per declaration (``json.dumps`` with options builds one per call)."""
    built = []
    init = json.JSONEncoder.__init__

    def counting(self: json.JSONEncoder, *args: Any, **kwargs: Any) -> None:
        built.append(kwargs)
        init(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counting)
    for _ in range(3):
        assert encode_declaration(_sample(), "text") is not None
    assert built == []


def _sample() -> model.Declaration:
    return model.Declaration(
        name="docs",
        kind=model.ArtifactKind.FOLDER,
        tags=("type:docs",),
        mounts={"impl": "calc"},
        basis=False,
        fingerprint=model.ArtifactsumFingerprint(files=(".",), ignore=()),
        evals=(
            model.Eval(
                "accuracy",
                "The guide is right",
                model.AgentProfile("openai", "gpt-5.1", "medium"),
                {"instruction": "Compare {docs} with {impl}."},
                None,
                None,
            ),
        ),
        agent_tools=(model.BuiltinAgentTool("read", "read", None, None),),
        human_tools=(),
        agent_sessions=(),
        dependency_gates=None,
        references=(model.Reference("impl", model.ReferenceUse.INSTRUCTION, "evals.x", "x"),),
    )


def test_a_value_not_of_its_declared_type_is_not_stored() -> None:
    """Never built by the parser; stored, it would read back as another type."""
    sample = _sample()
    first = sample.evals[0]
    assert encode_declaration(sample, "") is not None
    for changed in (
        dataclasses.replace(sample, tags=["type:docs"]),  # type: ignore[arg-type]
        dataclasses.replace(sample, basis=1),  # type: ignore[arg-type]
        dataclasses.replace(sample, mounts={"impl": ("calc",)}),  # type: ignore[dict-item]
        dataclasses.replace(sample, evals=(dataclasses.replace(first, payload={1: 2}),)),  # type: ignore[dict-item]
        dataclasses.replace(sample, fingerprint=None),  # type: ignore[arg-type]
        dataclasses.replace(
            sample, evals=(dataclasses.replace(first, payload={"x": float("inf")}),)
        ),
    ):
        assert encode_declaration(changed, "") is None


def _stored_body(body: str, hashes: str = "") -> str:
    return f"{DECLARATION_FORMAT}\n{body}\n{hashes}\ntext"


_HASH = "0123456789abcdef" * 4  # a lowercase hex SHA-256


def test_each_evals_hash_reads_back_with_its_declaration() -> None:
    """The hashes discovery keeps with a declaration: none, or one per eval, in order."""
    text = "name = 'docs'\n"
    stored = encode_declaration(_sample(), text, (_HASH,))
    assert stored is not None
    assert decode_stored(stored) == (_sample(), text, (_HASH,))
    assert decode_declaration(stored) == (_sample(), text)
    unhashed = encode_declaration(_sample(), text)
    assert unhashed is not None
    assert decode_stored(unhashed) == (_sample(), text, ())
    with pytest.raises(ValueError, match="one hash per eval"):
        encode_declaration(_sample(), text, (_HASH, _HASH))
    with pytest.raises(ValueError, match="lowercase hex"):
        encode_declaration(_sample(), text, (_HASH.upper(),))


@pytest.mark.parametrize(
    "hashes",
    [
        f"{_HASH} {_HASH}",  # two for one eval
        _HASH.upper(),
        _HASH[:-1],
        _HASH + " ",
        " " + _HASH,
        "not a hash",
    ],
)
def test_a_stored_form_with_other_eval_hashes_is_refused(hashes: str) -> None:
    stored = encode_declaration(_sample(), "text")
    assert stored is not None
    _, body, _, _text = stored.split("\n", 3)
    assert decode_stored(_stored_body(body, _HASH))[2] == (_HASH,)  # the layout is right
    with pytest.raises(StoredFormError):
        decode_stored(_stored_body(body, hashes))


def test_the_source_text_is_kept_as_it_is() -> None:
    text = 'name = "docs"\n\n# "quoted" \\ \u2028 ünïcode\n'
    stored = encode_declaration(_sample(), text)
    assert stored is not None and stored.endswith("\n" + text)
    assert decode_declaration(stored) == (_sample(), text)


@pytest.mark.parametrize(
    "stored",
    [
        "not a stored form",
        f"{DECLARATION_FORMAT}",
        f"{DECLARATION_FORMAT}\n[]",  # no text after the body
        f"{DECLARATION_FORMAT}\n[]\ntext",  # version 3's layout: no line of eval hashes
        "declaration-0-old\n[]\ntext",
        '["{FORMAT}", "x", ["c", "Declaration", {"name": "x"}]]',  # version 2's layout
        _stored_body("not json"),
        _stored_body("{}"),
        _stored_body('["docs"]'),  # too few fields (none is left to its default)
        _stored_body("null"),
    ],
)
def test_a_stored_form_of_another_shape_is_refused(stored: str) -> None:
    with pytest.raises(StoredFormError):
        decode_declaration(stored.replace("{FORMAT}", DECLARATION_FORMAT))


def _tampered(path: tuple[int, ...], value: Any) -> str:
    import json

    stored = encode_declaration(_sample(), "text")
    assert stored is not None
    _, body, hashes, text = stored.split("\n", 3)
    row = json.loads(body)
    at = row
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return f"{DECLARATION_FORMAT}\n{json.dumps(row)}\n{hashes}\n{text}"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((1,), "nope"),  # an unknown ArtifactKind
        ((1,), ["folder"]),  # an unhashable one
        ((2,), "type:docs"),  # a tuple that is not a list
        ((3,), ["impl", "calc"]),  # a mapping that is not an object
        ((5,), ["Popen", []]),  # a class outside the union
        ((5,), ["ArtifactsumFingerprint", [["."]]]),  # one field short
        ((5,), ["ArtifactsumFingerprint", [["."], [], []]]),  # one field too many
        ((6, 0, 2), ["AgentProfile", {"backend": "openai"}]),  # fields by name
        ((6, 0, 2, 1, 6), "human"),  # a kind its Literal does not allow
        ((11, 0, 1), "INSTRUCTION"),  # an enum by member name, not value
    ],
)
def test_a_tampered_stored_form_is_refused(path: tuple[int, ...], value: Any) -> None:
    with pytest.raises(StoredFormError):
        decode_declaration(_tampered(path, value))
