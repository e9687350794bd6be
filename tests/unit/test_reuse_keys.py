"""Reuse keys (reference/declarations.md §3.2-3.4): the canonical encoder, the eval definition
hash, what an eval depends on, the v2 key layout and ``key_inputs`` over a workspace.

Golden values are computed here independently, by hashing the documented bytes by hand.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifactize.domain.declarations.model import (
    AgentProfile,
    ArtifactKind,
    Eval,
    HumanProfile,
    RuntimeProfile,
    ScriptFingerprint,
)
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.reviews.reuse.canonical_json import CanonicalJsonError, canonical_json
from artifactize.domain.reviews.reuse.fingerprints import FingerprintError
from artifactize.domain.reviews.reuse.keys import (
    REUSE_KEY_VERSION,
    eval_def_hash,
    eval_dependencies,
    key_inputs,
    reuse_key,
)
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.filesystem import MemoryFilesystem, Node, Symlink


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- canonical JSON ---------------------------------------------------------------------------


def test_canonical_json_is_compact_sorted_recursively_and_unescaped_utf8() -> None:
    value = {"b": [1, {"z": True, "a": None}], "a": "é✓", "c": {"y": 1.5, "x": 'q"\n'}}
    assert canonical_json(value) == (
        '{"a":"é✓","b":[1,{"a":null,"z":true}],"c":{"x":"q\\"\\n","y":1.5}}'.encode()
    )


def test_canonical_json_accepts_any_mapping_and_tuples() -> None:
    class Frozen(Mapping[str, Any]):
        def __init__(self, data: dict[str, Any]) -> None:
            self.data = data

        def __getitem__(self, key: str) -> Any:
            return self.data[key]

        def __iter__(self) -> Any:
            return iter(self.data)

        def __len__(self) -> int:
            return len(self.data)

    assert canonical_json(Frozen({"b": (1, 2), "a": Frozen({})})) == b'{"a":{},"b":[1,2]}'


class _Word(enum.StrEnum):
    A = "a"


class _Count(int):
    pass


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from([_Word.A, _Count(3)]),
    lambda inner: st.lists(inner) | st.tuples(inner, inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(_json_values)
def test_canonical_json_is_json_dumps_with_its_options(value: Any) -> None:
    """The encoder made once and the exact-type shortcuts write what ``json.dumps`` with the
    documented options writes, subclasses of the scalar types (an enum of text) included."""
    expected = json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )
    assert canonical_json(value) == expected.encode("utf-8")


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), {1: "x"}, {"s": {1, 2}}, "\udcff", b"bytes"]
)
def test_canonical_json_refuses_values_without_a_canonical_form(value: Any) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, {"b": {1, 2}}]}, "$.a[1].b: set is not a JSON value"),
        ({"a": ({"x": 1}, {2: "y"})}, "$.a[1]: object key 2 is not a string"),
    ],
)
def test_a_refusal_says_where_the_value_is(value: Any, where: str) -> None:
    with pytest.raises(CanonicalJsonError, match=re.escape(where)):
        canonical_json(value)


# --- eval definition hash ---------------------------------------------------------------------

AGENT = Eval(
    id="accuracy",
    title="The guide agrees with the spec",
    profile=AgentProfile(backend="anthropic", model="model-a", reasoning="high"),
    payload={"instruction": "Review it.", "focus": ["auth"]},
    pass_schema={"type": "object"},
    fail_schema=None,
)


def test_eval_def_hash_golden_agent() -> None:
    text = (
        '{"failSchema":null,"kind":"agent","passSchema":{"type":"object"},'
        '"payload":{"focus":["auth"],"instruction":"Review it."}}'
    )
    assert eval_def_hash(AGENT) == sha(text.encode())


def test_eval_def_hash_golden_runtime_covers_command_and_args() -> None:
    item = Eval(
        id="links",
        title="t",
        profile=RuntimeProfile(command="./run.sh", args=("--all", "ü")),
        payload={"instruction": "Rün it ✓", "z": {"b": 2, "a": 1}},
        pass_schema=None,
        fail_schema={"type": "object"},
    )
    text = (
        '{"args":["--all","ü"],"command":"./run.sh","failSchema":{"type":"object"},'
        '"kind":"runtime","passSchema":null,"payload":{"instruction":"Rün it ✓","z":{"a":1,"b":2}}}'
    )
    assert eval_def_hash(item) == sha(text.encode("utf-8"))


def test_eval_def_hash_golden_human() -> None:
    item = dataclasses.replace(AGENT, profile=HumanProfile(), pass_schema=None)
    text = '{"failSchema":null,"kind":"human","passSchema":null,"payload":{"focus":["auth"],"instruction":"Review it."}}'
    assert eval_def_hash(item) == sha(text.encode())


@pytest.mark.parametrize(
    "changed",
    [
        dataclasses.replace(AGENT, profile=AgentProfile(backend="anthropic", model="model-b")),
        dataclasses.replace(AGENT, profile=AgentProfile(backend="openai", model="model-a")),
        dataclasses.replace(
            AGENT,
            profile=AgentProfile(
                backend="anthropic",
                model="model-a",
                reasoning="low",
                timeout_ms=1,
                max_tool_calls=3,
                max_tokens=10,
            ),
        ),
        dataclasses.replace(AGENT, id="other", title="Another title"),
        dataclasses.replace(AGENT, profile_variants={"quick": AgentProfile("openai", "m")}),
        dataclasses.replace(AGENT, payload={"focus": ["auth"], "instruction": "Review it."}),
    ],
)
def test_what_the_definition_hash_leaves_out(changed: Eval) -> None:
    assert eval_def_hash(changed) == eval_def_hash(AGENT)


@pytest.mark.parametrize(
    "changed",
    [
        dataclasses.replace(AGENT, payload={"instruction": "Review it!", "focus": ["auth"]}),
        dataclasses.replace(AGENT, payload={"instruction": "Review it.", "focus": ["authz"]}),
        dataclasses.replace(AGENT, payload={"instruction": "Review it."}),
        dataclasses.replace(AGENT, pass_schema={"type": "object", "required": ["x"]}),
        dataclasses.replace(AGENT, pass_schema=None),
        dataclasses.replace(AGENT, fail_schema={"type": "object"}),
        dataclasses.replace(AGENT, profile=HumanProfile()),
    ],
)
def test_what_the_definition_hash_covers(changed: Eval) -> None:
    assert eval_def_hash(changed) != eval_def_hash(AGENT)


RUNTIME = Eval("run", "t", RuntimeProfile("make", ("test",)), {"instruction": "Run."}, None, None)


def test_runtime_command_and_args_enter_the_hash_but_not_the_timeout() -> None:
    base = eval_def_hash(RUNTIME)
    assert eval_def_hash(RUNTIME, RuntimeProfile("make", ("test",), timeout_ms=5)) == base
    assert eval_def_hash(RUNTIME, RuntimeProfile("make", ("check",))) != base
    assert eval_def_hash(RUNTIME, RuntimeProfile("gmake", ("test",))) != base
    assert eval_def_hash(RUNTIME, RuntimeProfile("make", ("te", "st"))) != base


def test_an_agent_variant_does_not_change_the_hash() -> None:
    assert eval_def_hash(AGENT, AgentProfile("openai", "other", "max")) == eval_def_hash(AGENT)


# --- the key layout ---------------------------------------------------------------------------

DEF_HASH = "ab" * 32
FP_A = "artifactsum:" + "0" * 64
FP_B = "v1:build-42"


def test_reuse_key_golden_layout() -> None:
    text = (
        "artifactize-key-v2\n"
        f"eval {DEF_HASH}\n"
        f"artifact alpha folder {FP_A}\n"
        f"artifact beta file {FP_B}\n"
    )
    deps = {"beta": (ArtifactKind.FILE, FP_B), "alpha": (ArtifactKind.FOLDER, FP_A)}
    assert REUSE_KEY_VERSION == "artifactize-key-v2"
    assert reuse_key(DEF_HASH, deps) == sha(text.encode())


def test_reuse_key_without_dependencies() -> None:
    assert reuse_key(DEF_HASH, {}) == sha(f"artifactize-key-v2\neval {DEF_HASH}\n".encode())


@pytest.mark.parametrize(
    ("def_hash", "deps"),
    [
        ("ac" + "ab" * 31, {"alpha": (ArtifactKind.FOLDER, FP_A)}),
        (DEF_HASH, {"alpha": (ArtifactKind.FOLDER, FP_A[:-1] + "1")}),
        (DEF_HASH, {"alpha": (ArtifactKind.FILE, FP_A)}),
        (DEF_HASH, {"alphb": (ArtifactKind.FOLDER, FP_A)}),
        (DEF_HASH, {"alpha": (ArtifactKind.FOLDER, FP_A), "beta": (ArtifactKind.FILE, FP_B)}),
    ],
)
def test_changing_any_input_byte_changes_the_key(
    def_hash: str, deps: dict[str, tuple[ArtifactKind, str]]
) -> None:
    assert reuse_key(def_hash, deps) != reuse_key(DEF_HASH, {"alpha": (ArtifactKind.FOLDER, FP_A)})


@pytest.mark.parametrize(
    ("def_hash", "deps"),
    [
        ("", {}),
        ("a b", {}),
        (DEF_HASH, {"a b": (ArtifactKind.FOLDER, FP_A)}),
        (DEF_HASH, {"a": (ArtifactKind.FOLDER, "x\ny")}),
        (DEF_HASH, {"a": (ArtifactKind.FOLDER, "")}),
    ],
)
def test_fields_that_could_collide_are_refused(
    def_hash: str, deps: dict[str, tuple[ArtifactKind, str]]
) -> None:
    with pytest.raises(ValueError, match="cannot enter a reuse key"):
        reuse_key(def_hash, deps)


# --- a workspace ------------------------------------------------------------------------------


def decl(name: str, body: str = "") -> bytes:
    return f'name = "{name}"\n{body}'.encode()


REVIEW = """
[evals.review]
title = "t"
profile = { kind = "agent", backend = "openai", model = "MODEL" }
payload.instruction = "INSTRUCTION"

[evals.run]
title = "t"
profile = { kind = "runtime", command = "true", args = ["{unrelated}"] }
payload.instruction = "Run."

[evals.far]
title = "t"
profile = { kind = "human" }
payload.instruction = "Look at {far}."
"""


def tree(
    *,
    app: str = "",
    model: str = "m1",
    instruction: str = "Use {glossary} and {spec}.",
    spec: str = "",
    files: Mapping[str, Node] | None = None,
) -> dict[str, Node]:
    """``app`` (mounts the file Artifact ``terms`` as ``glossary``) with a child and a grandchild."""
    evals = REVIEW.replace("MODEL", model).replace("INSTRUCTION", instruction)
    return {
        "app": {
            "index.artf": decl("app", 'mounts = { glossary = "terms" }\n' + app + evals),
            "main.py": b"print(1)\n",
            "child": {
                "index.artf": decl("child", 'mounts = { f = "far" }'),
                "c.md": b"c",
                "grand": {"index.artf": decl("grand"), "g.md": b"g"},
            },
            **(files or {}),
        },
        "shared": {"terms.csv": b"a,b\n", "terms.csv.artf": decl("terms")},
        "spec": {"index.artf": decl("spec", spec), "s.yaml": b"s"},
        "far": {"index.artf": decl("far"), "f": b"f"},
        "unrelated": {"index.artf": decl("unrelated"), "u": b"u"},
    }


def load(nodes: Mapping[str, Node]) -> tuple[Workspace, MemoryFilesystem]:
    filesystem = MemoryFilesystem({"/repo": nodes})
    return ConfigService(filesystem).load("/repo"), filesystem


def artifactsum_by_hand(files: Mapping[str, bytes]) -> str:
    data = b"".join(p.encode() + b"\0" + hashlib.sha256(files[p]).digest() for p in sorted(files))
    return "artifactsum:" + sha(data)


def test_dependencies_are_target_mounts_children_and_this_evals_references() -> None:
    workspace, _ = load(tree())
    assert eval_dependencies(workspace, "app/review") == ("app", "child", "spec", "terms")
    assert eval_dependencies(workspace, "app/run") == ("app", "child", "terms", "unrelated")
    assert eval_dependencies(workspace, "app/far") == ("app", "child", "far", "terms")


def test_dependencies_go_one_hop_only() -> None:
    workspace, _ = load(tree())
    dependencies = eval_dependencies(workspace, "app/review")
    assert "grand" not in dependencies  # the child's child
    assert "far" not in dependencies  # the child's mount, and another eval's reference


def test_key_inputs_golden() -> None:
    workspace, filesystem = load(tree())
    inputs = key_inputs(workspace, "app/review", filesystem)
    fingerprints = {
        "app": artifactsum_by_hand({"main.py": b"print(1)\n"}),
        "child": artifactsum_by_hand({"c.md": b"c"}),
        "spec": artifactsum_by_hand({"s.yaml": b"s"}),
        "terms": artifactsum_by_hand({"terms.csv": b"a,b\n"}),
    }
    def_hash = sha(
        b'{"failSchema":null,"kind":"agent","passSchema":null,'
        b'"payload":{"instruction":"Use {glossary} and {spec}."}}'
    )
    text = (
        f"artifactize-key-v2\neval {def_hash}\n"
        f"artifact app folder {fingerprints['app']}\n"
        f"artifact child folder {fingerprints['child']}\n"
        f"artifact spec folder {fingerprints['spec']}\n"
        f"artifact terms file {fingerprints['terms']}\n"
    )
    assert inputs.def_hash == def_hash
    assert inputs.dependencies == ("app", "child", "spec", "terms")
    assert dict(inputs.fingerprints) == fingerprints
    assert inputs.key == sha(text.encode())
    assert inputs.unkeyed_reason is None
    assert sorted(inputs.manifests) == ["app", "child", "spec", "terms"]
    assert inputs.manifests["terms"]["inputs"] == fingerprints["terms"]
    assert filesystem.open_handles == 0


def key_of(nodes: Mapping[str, Node], qualified_id: str = "app/review") -> str | None:
    workspace, filesystem = load(nodes)
    return key_inputs(workspace, qualified_id, filesystem).key


def test_the_same_inputs_give_the_same_key() -> None:
    assert key_of(tree()) == key_of(tree())


def edited(*path: str, data: bytes = b"changed") -> dict[str, Node]:
    """``tree()`` with the file at ``path`` replaced by ``data``."""
    nodes = tree()
    folder: Any = nodes
    for part in path[:-1]:
        folder = folder[part]
    folder[path[-1]] = data
    return nodes


def test_an_edit_anywhere_the_key_covers_changes_it() -> None:
    base = key_of(tree())
    assert key_of(edited("app", "main.py")) != base
    assert key_of(edited("app", "child", "c.md")) != base
    assert key_of(edited("shared", "terms.csv")) != base  # the mounted file Artifact
    assert key_of(edited("spec", "s.yaml")) != base  # referenced in the instruction
    assert key_of(tree(instruction="Use {glossary} and {spec}!")) != base


def test_an_edit_outside_the_key_leaves_it() -> None:
    base = key_of(tree())
    assert key_of(edited("unrelated", "u")) == base
    assert key_of(edited("far", "f")) == base
    assert key_of(edited("app", "child", "grand", "g.md")) == base
    assert key_of(tree(model="m2")) == base


def test_an_unkeyed_target_names_itself_and_computes_nothing() -> None:
    nodes = tree(app="fingerprint = false\n", files={"link": Symlink("main.py")})
    workspace, filesystem = load(nodes)
    inputs = key_inputs(workspace, "app/review", filesystem)
    assert inputs.key is None
    assert inputs.unkeyed_reason == "Target Artifact `app` declares no fingerprint."
    assert inputs.fingerprints == {}
    assert inputs.def_hash == eval_def_hash(workspace.find_eval("app/review").eval)


def test_an_unkeyed_dependency_is_named() -> None:
    workspace, filesystem = load(tree(spec="fingerprint = false"))
    inputs = key_inputs(workspace, "app/review", filesystem)
    assert inputs.key is None
    assert inputs.unkeyed_reason == "Dependency `spec` declares no fingerprint."
    keyed = key_inputs(workspace, "app/run", filesystem)  # does not reference spec
    assert keyed.key is not None


def test_a_fingerprint_failure_stops_the_key() -> None:
    workspace, filesystem = load(tree(files={"link": Symlink("main.py")}))
    with pytest.raises(FingerprintError, match="fingerprint file `link` is a symbolic link"):
        key_inputs(workspace, "app/review", filesystem)
    assert filesystem.open_handles == 0


class FakeScripts:
    def __init__(self, stdout: bytes) -> None:
        self.stdout = stdout

    def run(self, workspace: Workspace, artifact: Artifact, script: ScriptFingerprint) -> bytes:
        return self.stdout


SCRIPT = 'fingerprint = { script = { command = "./fp.sh", args = [] } }'


def test_a_script_dependency_enters_the_key_with_its_literal_value() -> None:
    workspace, filesystem = load(tree(spec=SCRIPT))
    inputs = key_inputs(workspace, "app/review", filesystem, FakeScripts(b"rev-7\n"))
    assert inputs.fingerprints["spec"] == "rev-7"
    assert "spec" not in inputs.manifests
    other = key_inputs(workspace, "app/review", filesystem, FakeScripts(b"rev-8\n"))
    assert other.key != inputs.key
    with pytest.raises(FingerprintError, match="fingerprint scripts are not supported"):
        key_inputs(workspace, "app/review", filesystem)


def test_a_runtime_variant_that_changes_args_changes_the_key() -> None:
    workspace, filesystem = load(tree())
    base = key_inputs(workspace, "app/run", filesystem)
    variant = RuntimeProfile("true", ("--other",))
    assert key_inputs(workspace, "app/run", filesystem, profile=variant).key != base.key


@pytest.mark.parametrize(
    "value", ["", " ", "a b", "a\tb", "a\nb", "\u00a0x", "x\u2028", "a\x1cb", "a\x85b", "x "]
)
def test_a_key_field_with_any_whitespace_is_refused(value: str) -> None:
    """What ``str.isspace`` calls whitespace, anywhere in the field, and the empty field."""
    with pytest.raises(ValueError, match="cannot enter a reuse key"):
        reuse_key(value or "x y", {})
    with pytest.raises(ValueError, match="cannot enter a reuse key"):
        reuse_key("0" * 64, {value or "a b": (ArtifactKind.FOLDER, "artifactsum:" + "0" * 64)})


def test_a_key_field_without_whitespace_is_taken() -> None:
    assert reuse_key("\u200bx", {"a-b": (ArtifactKind.FOLDER, "x")}) != reuse_key("x", {})


def test_a_kept_definition_hash_is_used_for_its_own_eval_only() -> None:
    """A definition hash kept with its declaration (file index) is the key's, for the very
    eval it was computed from with its own profile; a variant or another eval of the same
    ID is hashed again."""
    workspace, filesystem = load(tree())
    ref = workspace.find_eval("app/run")
    computed = eval_def_hash(ref.eval)
    kept = "f" * 64  # told apart from the computed one
    held = dataclasses.replace(workspace, def_hashes={"app/run": (ref.eval, kept)})
    assert held == workspace and repr(held) == repr(workspace)  # an optimisation only
    assert key_inputs(held, "app/run", filesystem).def_hash == kept
    assert key_inputs(held, "app/run", filesystem, profile=ref.eval.profile).def_hash == kept
    variant = RuntimeProfile("true", ("--other",))
    assert key_inputs(held, "app/run", filesystem, profile=variant).def_hash == eval_def_hash(
        ref.eval, variant
    )
    other = dataclasses.replace(workspace, def_hashes={"app/run": (AGENT, kept)})
    assert key_inputs(other, "app/run", filesystem).def_hash == computed
    assert key_inputs(workspace, "app/run", filesystem).def_hash == computed
