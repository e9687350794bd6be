"""The declaration parser: every rule at its boundary, with the exact key path of the problem."""

from __future__ import annotations

import json
import tomllib
from typing import Literal, cast

import pytest

from artifactize.domain.declarations.diagnostics import KeyProblems
from artifactize.domain.declarations.evals import POSITIVE_INT_MAX, PROFILE_VARIANTS_MAX
from artifactize.domain.declarations.fingerprint import (
    FINGERPRINT_FILES_MAX,
    FINGERPRINT_IGNORE_MAX,
)
from artifactize.domain.declarations.identifiers import IDENTIFIER_MAX_LENGTH
from artifactize.domain.declarations.model import (
    AGENT_DEFAULT_TIMEOUT_MS,
    COMMAND_TOOL_DEFAULT_TIMEOUT_MS,
    DEFAULT_INPUT_SCHEMA,
    RUNTIME_DEFAULT_TIMEOUT_MS,
    AgentProfile,
    ArtifactKind,
    ArtifactsumFingerprint,
    BuiltinAgentTool,
    BuiltinHumanTool,
    CommandAgentTool,
    CommandHumanTool,
    Declaration,
    DependencyProfile,
    HumanProfile,
    NoFingerprint,
    Reference,
    ReferenceUse,
    RuntimeProfile,
    ScriptFingerprint,
    SessionCommand,
)
from artifactize.domain.declarations.parse import TAGS_MAX, parse_declaration
from artifactize.domain.declarations.reader import TIMEOUT_MS_MAX, TIMEOUT_MS_MIN
from artifactize.domain.declarations.tools import EXECUTION_PATHS_MAX

FOLDER = ArtifactKind.FOLDER
FILE = ArtifactKind.FILE
HEAD = 'name = "app"\n'
HUMAN_EVAL = '[evals.e]\ntitle = "T"\nprofile = { kind = "human" }\npayload.instruction = "Look."\n'
JSON_TOOL = (
    '[views.agent_tools.t]\ndescription = "D"\nprotocol = "json"\ncommand = "c"\nargs = []\n'
)


def parse(
    text: str, kind: ArtifactKind = FOLDER, *, target: str | None = None, is_root: bool = False
) -> tuple[Declaration | None, list[tuple[str, str]]]:
    problems = KeyProblems()
    declaration = parse_declaration(
        tomllib.loads(text), kind, target=target, is_root=is_root, problems=problems
    )
    return declaration, problems.items


def ok(
    text: str, kind: ArtifactKind = FOLDER, *, target: str | None = None, is_root: bool = False
) -> Declaration:
    declaration, problems = parse(text, kind, target=target, is_root=is_root)
    assert problems == []
    assert declaration is not None
    return declaration


def refused(
    text: str, kind: ArtifactKind = FOLDER, *, target: str | None = None, is_root: bool = False
) -> list[tuple[str, str]]:
    declaration, problems = parse(text, kind, target=target, is_root=is_root)
    assert declaration is None
    assert problems
    return problems


def one_problem(
    text: str, kind: ArtifactKind = FOLDER, *, target: str | None = None, is_root: bool = False
) -> tuple[str, str]:
    problems = refused(text, kind, target=target, is_root=is_root)
    assert len(problems) == 1, problems
    return problems[0]


def assert_problem(
    text: str,
    key_path: str,
    fragment: str,
    kind: ArtifactKind = FOLDER,
    *,
    target: str | None = None,
    is_root: bool = False,
) -> None:
    """Exactly one problem, at ``key_path``, whose message contains ``fragment``."""
    path, message = one_problem(text, kind, target=target, is_root=is_root)
    assert path == key_path
    assert fragment in message, message


def toml_array(items: list[str]) -> str:
    return json.dumps(items)


# --- the top level ----------------------------------------------------------------------


def test_minimal_declaration() -> None:
    declaration = ok(HEAD)
    assert declaration.name == "app"
    assert declaration.kind is FOLDER
    assert declaration.tags == ()
    assert declaration.mounts == {}
    assert declaration.basis is False
    assert declaration.evals == ()
    assert declaration.agent_tools == ()
    assert declaration.human_tools == ()
    assert declaration.agent_sessions == ()
    assert declaration.dependency_gates is None
    assert declaration.references == ()


def test_name_is_required() -> None:
    assert one_problem("tags = []") == ("", "missing required key `name`")


@pytest.mark.parametrize(
    "name", ["", "bad name", "-x", "_x", "a" * (IDENTIFIER_MAX_LENGTH + 1), "a.b", "é"]
)
def test_name_must_be_an_identifier(name: str) -> None:
    path, message = one_problem(f"name = {json.dumps(name)}")
    assert path == "name"
    assert "Artifact name" in message


@pytest.mark.parametrize("name", ["a", "A9", "9a", "a-b_c", "a" * IDENTIFIER_MAX_LENGTH])
def test_valid_names(name: str) -> None:
    assert ok(f"name = {json.dumps(name)}").name == name


def test_name_must_be_a_string() -> None:
    assert one_problem("name = 1") == ("name", "expected a string, got an integer")


def test_unknown_top_level_key_lists_the_allowed_ones() -> None:
    path, message = one_problem(HEAD + "colour = 1")
    assert path == "colour"
    assert message.startswith("unknown key `colour`; expected one of `basis`, `evals`")


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("family", "families were removed in 0.9"),
        ("stale_key", "`stale_key` was removed"),
        ("stale", "`stale` was removed"),
        ("critics", "`critics` was removed"),
        ("env_requirements", "`env_requirements` was removed"),
    ],
)
def test_removed_top_level_keys_explain_their_successor(key: str, fragment: str) -> None:
    assert_problem(HEAD + f'{key} = "x"', key, fragment)


def test_review_policy_only_in_the_root_folder_declaration() -> None:
    text = HEAD + '[review_policy]\ndependency_gates = "ignore"\n'
    assert ok(text, is_root=True).dependency_gates == "ignore"
    assert_problem(text, "review_policy", "only in the root index.artf")
    assert_problem(text, "review_policy", "only in the root", kind=FILE, target="f", is_root=True)


def test_review_policy_choices_and_keys() -> None:
    assert ok(HEAD + '[review_policy]\ndependency_gates = "green"', is_root=True).dependency_gates
    assert_problem(
        HEAD + '[review_policy]\ndependency_gates = "red"',
        "review_policy.dependency_gates",
        "expected one of `green`, `ignore`",
        is_root=True,
    )
    assert_problem(
        HEAD + "[review_policy]\nmaxConcurrentExecutors = 2",
        "review_policy.maxConcurrentExecutors",
        "unknown key",
        is_root=True,
    )


def test_basis() -> None:
    assert ok(HEAD + "basis = true").basis is True
    assert ok(HEAD + "basis = false").basis is False
    assert_problem(HEAD + "basis = 1", "basis", "expected true or false, got an integer")
    assert_problem(HEAD + "basis = true\n" + HUMAN_EVAL, "basis", "cannot own evals")


def test_views_table_keys() -> None:
    assert_problem(HEAD + "[views]\nfoo = {}", "views.foo", "unknown key `foo`")
    assert_problem(
        HEAD + "[views]\nagentTools = {}",
        "views.agentTools",
        "declarations use snake_case: write `agent_tools`",
    )
    assert_problem(HEAD + "[views]\nhumanTools = {}", "views.humanTools", "write `human_tools`")
    assert_problem(
        HEAD + "[views]\nagentSessions = {}", "views.agentSessions", "write `agent_sessions`"
    )
    assert_problem(HEAD + "[views]\nagent_tools = 1", "views.agent_tools", "expected a table")


# --- tags ---------------------------------------------------------------------------------


def test_tags_constant() -> None:
    assert TAGS_MAX == 64


def test_tags_at_the_limit_pass() -> None:
    tags = [f"t{i}" for i in range(TAGS_MAX)]
    assert ok(HEAD + f"tags = {toml_array(tags)}").tags == tuple(tags)


def test_tags_one_past_the_limit_fail() -> None:
    tags = [f"t{i}" for i in range(TAGS_MAX + 1)]
    assert one_problem(HEAD + f"tags = {toml_array(tags)}") == (
        "tags",
        f"at most {TAGS_MAX} tags, got {TAGS_MAX + 1}",
    )


@pytest.mark.parametrize("tag", ["", " ", "\t"])
def test_blank_tags_fail(tag: str) -> None:
    assert one_problem(HEAD + f'tags = ["ok", {json.dumps(tag)}]') == (
        "tags[1]",
        "must not be blank",
    )


@pytest.mark.parametrize(
    ("char", "message"),
    [
        ("\u0000", "must not contain NUL"),
        ("\u0001", "must not contain control characters"),
        ("\u001f", "must not contain control characters"),
        ("\u007f", "must not contain control characters"),
        ("\n", "must not contain control characters"),
    ],
)
def test_tags_with_controls_fail(char: str, message: str) -> None:
    assert one_problem(HEAD + f"tags = [{json.dumps('a' + char + 'b')}]") == ("tags[0]", message)


def test_duplicate_tags_fail() -> None:
    assert one_problem(HEAD + 'tags = ["type:docs", "area:api", "type:docs"]') == (
        "tags[2]",
        "duplicate tag 'type:docs'",
    )


def test_tags_are_strings() -> None:
    assert one_problem(HEAD + 'tags = ["a", 1]') == ("tags[1]", "expected a string, got an integer")
    assert one_problem(HEAD + 'tags = "a"') == (
        "tags",
        "expected an array of strings, got a string",
    )


def test_tags_keep_order_and_text() -> None:
    assert ok(HEAD + 'tags = ["type:docs", "Área 51", "x y"]').tags == (
        "type:docs",
        "Área 51",
        "x y",
    )


# --- mounts ----------------------------------------------------------------------------


def test_mounts() -> None:
    declaration = ok(HEAD + 'mounts = { glossary = "shared-terms", spec = "spec" }')
    assert declaration.mounts == {"glossary": "shared-terms", "spec": "spec"}


def test_mount_alias_must_be_an_identifier() -> None:
    path, message = one_problem(HEAD + 'mounts = { "bad alias" = "x" }')
    assert path == 'mounts."bad alias"'
    assert "mount alias" in message


def test_mount_target_must_be_an_identifier_string() -> None:
    assert one_problem(HEAD + "mounts = { g = 1 }") == (
        "mounts.g",
        "expected the name of the mounted Artifact (a string)",
    )
    path, message = one_problem(HEAD + 'mounts = { g = "bad name" }')
    assert path == "mounts.g"
    assert "mounted Artifact name" in message


def test_mount_alias_must_not_shadow_a_file_artifact_target() -> None:
    assert_problem(
        HEAD + 'mounts = { README = "x" }', "mounts.README", "shadows", kind=FILE, target="README"
    )
    assert ok(HEAD + 'mounts = { README = "x" }').mounts == {"README": "x"}  # folders may


def test_mounts_must_be_a_table() -> None:
    assert_problem(HEAD + 'mounts = "x"', "mounts", "expected a table")


# --- fingerprints ----------------------------------------------------------------------


def test_fingerprint_constants() -> None:
    assert FINGERPRINT_FILES_MAX == 64
    assert FINGERPRINT_IGNORE_MAX == 64


def test_omitted_fingerprint_defaults_to_the_whole_folder() -> None:
    assert ok(HEAD).fingerprint == ArtifactsumFingerprint(files=(".",), ignore=())


def test_omitted_fingerprint_defaults_to_the_target_of_a_file_artifact() -> None:
    declaration = ok(HEAD, FILE, target="diagram.svg")
    assert declaration.fingerprint == ArtifactsumFingerprint(files=("diagram.svg",), ignore=())


def test_fingerprint_false_disables_reuse() -> None:
    assert ok(HEAD + "fingerprint = false").fingerprint == NoFingerprint()
    assert ok(HEAD + "fingerprint = false", FILE, target="f").fingerprint == NoFingerprint()


def test_fingerprint_true_is_refused() -> None:
    assert_problem(
        HEAD + "fingerprint = true", "fingerprint", "`fingerprint = true` is not allowed"
    )


@pytest.mark.parametrize("value", ["1", '"x"', '["."]'])
def test_fingerprint_must_be_false_or_a_table(value: str) -> None:
    assert_problem(HEAD + f"fingerprint = {value}", "fingerprint", "expected false or a table")


def test_empty_fingerprint_table_means_the_whole_folder() -> None:
    assert ok(HEAD + "fingerprint = {}").fingerprint == ArtifactsumFingerprint((".",), ())


def test_empty_fingerprint_table_is_refused_for_a_file_artifact() -> None:
    assert_problem(
        HEAD + "fingerprint = {}",
        "fingerprint.files",
        "needs `files = [target]`",
        kind=FILE,
        target="f",
    )


def test_folder_fingerprint_files_and_ignore() -> None:
    declaration = ok(
        HEAD + 'fingerprint = { files = ["pages", "openapi.yaml"], ignore = ["*.tmp"] }'
    )
    assert declaration.fingerprint == ArtifactsumFingerprint(("pages", "openapi.yaml"), ("*.tmp",))


def test_folder_fingerprint_ignore_alone_keeps_the_whole_folder() -> None:
    declaration = ok(HEAD + 'fingerprint = { ignore = ["build/"] }')
    assert declaration.fingerprint == ArtifactsumFingerprint((".",), ("build/",))


def test_folder_fingerprint_files_must_not_be_empty() -> None:
    assert_problem(HEAD + "fingerprint = { files = [] }", "fingerprint.files", "at least one path")


def test_fingerprint_files_at_the_limit_pass_and_one_past_fail() -> None:
    files = [f"f{i}" for i in range(FINGERPRINT_FILES_MAX)]
    assert ok(HEAD + f"fingerprint = {{ files = {toml_array(files)} }}").fingerprint == (
        ArtifactsumFingerprint(tuple(files), ())
    )
    files.append("extra")
    assert one_problem(HEAD + f"fingerprint = {{ files = {toml_array(files)} }}") == (
        "fingerprint.files",
        f"at most {FINGERPRINT_FILES_MAX} entries, got {FINGERPRINT_FILES_MAX + 1}",
    )


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("", "it is empty"),
        ("/abs", "empty component"),
        ("a//b", "empty component"),
        ("../x", "'..' component"),
        ("./x", "'.' component"),
        ("a\\b", "backslash"),
        ("C:/x", "colon"),
        ("index.artf", ".artf declaration"),
        ("sub/index.artf", ".artf declaration"),
        ("hero.png.artf", ".artf declaration"),
    ],
)
def test_fingerprint_file_rules(path: str, fragment: str) -> None:
    assert_problem(
        HEAD + f'fingerprint = {{ files = ["ok", {json.dumps(path)}] }}',
        "fingerprint.files[1]",
        fragment,
    )


def test_fingerprint_files_must_be_unique() -> None:
    assert_problem(
        HEAD + 'fingerprint = { files = ["a", "b", "a"] }', "fingerprint.files[2]", "listed twice"
    )


def test_fingerprint_ignore_rules() -> None:
    assert_problem(
        HEAD + 'fingerprint = { ignore = ["ok", "!keep"] }', "fingerprint.ignore[1]", "negated"
    )
    assert_problem(
        HEAD + 'fingerprint = { ignore = ["# note"] }', "fingerprint.ignore[0]", "comments"
    )
    assert_problem(HEAD + 'fingerprint = { ignore = [" "] }', "fingerprint.ignore[0]", "blank")


def test_fingerprint_ignore_at_the_limit_pass_and_one_past_fail() -> None:
    patterns = [f"*.t{i}" for i in range(FINGERPRINT_IGNORE_MAX)]
    ok(HEAD + f"fingerprint = {{ ignore = {toml_array(patterns)} }}")
    patterns.append("*.x")
    assert_problem(
        HEAD + f"fingerprint = {{ ignore = {toml_array(patterns)} }}",
        "fingerprint.ignore",
        f"at most {FINGERPRINT_IGNORE_MAX} patterns",
    )


def test_fingerprint_unknown_key() -> None:
    assert_problem(HEAD + "fingerprint = { dependencies = [] }", "fingerprint.dependencies", "0.5")


def test_file_artifact_fingerprint_names_only_its_target() -> None:
    text = HEAD + 'fingerprint = { files = ["diagram.svg"] }'
    assert ok(text, FILE, target="diagram.svg").fingerprint == ArtifactsumFingerprint(
        ("diagram.svg",), ()
    )
    assert_problem(
        HEAD + 'fingerprint = { files = ["other.svg"] }',
        "fingerprint.files[0]",
        "fingerprints only its target",
        kind=FILE,
        target="diagram.svg",
    )
    assert_problem(
        HEAD + 'fingerprint = { files = ["."] }',
        "fingerprint.files[0]",
        "'.' component",
        kind=FILE,
        target="diagram.svg",
    )


def test_file_artifact_fingerprint_refuses_ignore_even_empty() -> None:
    assert_problem(
        HEAD + 'fingerprint = { files = ["f"], ignore = [] }',
        "fingerprint.ignore",
        "cannot take `ignore`",
        kind=FILE,
        target="f",
    )


def test_script_fingerprint() -> None:
    text = HEAD + (
        "[fingerprint.script]\n"
        'command = "./fp.sh"\nargs = ["--spec={spec}/reqs", "x"]\nfiles = ["fp.sh"]\n'
        "timeout_ms = 5000\n"
    )
    declaration = ok(text)
    assert declaration.fingerprint == ScriptFingerprint(
        "./fp.sh", ("--spec={spec}/reqs", "x"), ("fp.sh",), 5000
    )
    assert declaration.references == (
        Reference("spec", ReferenceUse.SCRIPT_ARGV, "fingerprint.script.args[0]", None, "reqs"),
    )


def test_script_fingerprint_defaults_and_file_artifacts() -> None:
    text = HEAD + 'fingerprint = { script = { command = "fp", args = [] } }'
    assert ok(text).fingerprint == ScriptFingerprint("fp", (), ())
    assert ok(text, FILE, target="f").fingerprint == ScriptFingerprint("fp", (), ())


def test_script_fingerprint_rules() -> None:
    assert_problem(
        HEAD + 'fingerprint = { script = { command = "fp" } }',
        "fingerprint.script",
        "missing required key `args`",
    )
    assert_problem(
        HEAD + 'fingerprint = { script = { command = "fp{x}", args = [] } }',
        "fingerprint.script.command",
        "braces",
    )
    assert_problem(
        HEAD + 'fingerprint = { script = { command = "fp", args = ["{bad name}"] } }',
        "fingerprint.script.args[0]",
        "not a valid reference name",
    )
    assert_problem(
        HEAD + 'fingerprint = { script = { command = "fp", args = [], timeout_ms = 0 } }',
        "fingerprint.script.timeout_ms",
        "from 1 to 2147483647",
    )
    assert_problem(
        HEAD + 'fingerprint = { files = ["a"], script = { command = "fp", args = [] } }',
        "fingerprint.files",
        "inside `script`",
    )
    assert_problem(
        HEAD + 'fingerprint = { ignore = ["a"], script = { command = "fp", args = [] } }',
        "fingerprint.ignore",
        "cannot take `ignore`",
    )


# --- evals: common fields ------------------------------------------------------------------


def eval_text(profile: str, extra: str = "", instruction: str = '"Look."') -> str:
    return (
        HEAD
        + f'[evals.e]\ntitle = "T"\nprofile = {profile}\npayload.instruction = {instruction}\n'
        + extra
    )


def test_human_eval() -> None:
    (only,) = ok(HEAD + HUMAN_EVAL).evals
    assert only.id == "e"
    assert only.title == "T"
    assert only.profile == HumanProfile()
    assert only.payload == {"instruction": "Look."}
    assert only.instruction == "Look."
    assert only.pass_schema is None and only.fail_schema is None
    assert only.profile_variants == {}


@pytest.mark.parametrize("key", ["title", "profile", "payload"])
def test_eval_required_keys(key: str) -> None:
    lines = {
        "title": 'title = "T"',
        "profile": 'profile = { kind = "human" }',
        "payload": 'payload = { instruction = "Look." }',
    }
    body = "\n".join(line for name, line in lines.items() if name != key)
    assert one_problem(HEAD + "[evals.e]\n" + body) == ("evals.e", f"missing required key `{key}`")


def test_eval_with_nothing_reports_every_missing_key() -> None:
    declaration, problems = parse(HEAD + "[evals.e]\n")
    assert declaration is None
    assert problems == [
        ("evals.e", "missing required key `title`"),
        ("evals.e", "missing required key `profile`"),
        ("evals.e", "missing required key `payload`"),
    ]


@pytest.mark.parametrize("title", ['""', '" "', '"\\n"'])
def test_eval_title_must_be_nonblank(title: str) -> None:
    assert_problem(
        HEAD + HUMAN_EVAL.replace('title = "T"', f"title = {title}"), "evals.e.title", "blank"
    )


def test_eval_title_must_be_a_string() -> None:
    assert_problem(
        HEAD + HUMAN_EVAL.replace('title = "T"', "title = 1"), "evals.e.title", "expected a string"
    )


def test_eval_id_rules() -> None:
    path, message = one_problem(HEAD + HUMAN_EVAL.replace("[evals.e]", '[evals."bad id"]'))
    assert path == 'evals."bad id"'
    assert "eval ID" in message
    assert one_problem(HEAD + "[evals]\ne = 1") == (
        "evals.e",
        "expected a table describing the eval",
    )
    assert_problem(HEAD + "evals = 1", "evals", "expected a table")


def test_eval_removed_and_unknown_keys() -> None:
    assert_problem(HEAD + HUMAN_EVAL + 'id = "e"', "evals.e.id", "its table key")
    assert_problem(
        HEAD + HUMAN_EVAL + "result_check = {}", "evals.e.result_check", "removed in 0.6"
    )
    assert_problem(
        HEAD + HUMAN_EVAL + "passSchema = {}", "evals.e.passSchema", "write `pass_schema`"
    )
    assert_problem(
        HEAD + HUMAN_EVAL + "failSchema = {}", "evals.e.failSchema", "write `fail_schema`"
    )
    assert_problem(
        HEAD + HUMAN_EVAL + "profileVariants = {}",
        "evals.e.profileVariants",
        "write `profile_variants`",
    )
    assert_problem(HEAD + HUMAN_EVAL + "extra = 1", "evals.e.extra", "unknown key `extra`")


def test_evals_are_ordered_by_id() -> None:
    text = HEAD + "".join(HUMAN_EVAL.replace("[evals.e]", f"[evals.{i}]") for i in ("b", "C", "a"))
    assert [e.id for e in ok(text).evals] == ["C", "a", "b"]


# --- evals: profiles -----------------------------------------------------------------------


def test_profile_must_be_a_table() -> None:
    assert_problem(eval_text('"human"'), "evals.e.profile", "expected a table, got a string")


def test_profile_kind_is_required_and_chosen() -> None:
    problems = refused(eval_text('{ model = "m" }'))
    assert ("evals.e.profile", "missing required key `kind` (runtime, agent or human)") in problems
    assert_problem(
        eval_text('{ kind = "robot" }'),
        "evals.e.profile.kind",
        "expected one of `runtime`, `agent`, `human`",
    )


def test_a_dependency_eval_takes_no_payload_with_an_explanation() -> None:
    # Dependency evals are supported now (issue 11); the payload they may not have is refused.
    assert_problem(
        eval_text('{ kind = "dependency", depends_on = ["x"] }'),
        "evals.e.payload",
        "a dependency eval declares only `title` and `profile`",
    )


DEPENDENCY = '[evals.e]\ntitle = "T"\nprofile = {{ kind = "dependency", depends_on = {names} }}\n'


def test_a_dependency_eval() -> None:
    (only,) = ok(HEAD + DEPENDENCY.format(names='["a", "b"]')).evals
    assert only.profile == DependencyProfile(("a", "b")) and only.payload == {}


@pytest.mark.parametrize(
    ("names", "key_path", "message"),
    [
        ("[]", "evals.e.profile.depends_on", "must list 1-64"),
        (json.dumps([f"a{n}" for n in range(65)]), "evals.e.profile.depends_on", "got 65"),
        ('["a", "a"]', "evals.e.profile.depends_on[1]", "listed twice"),
        ('["a b"]', "evals.e.profile.depends_on[0]", "must be 1-64 letters"),
    ],
)
def test_depends_on_rules(names: str, key_path: str, message: str) -> None:
    assert_problem(HEAD + DEPENDENCY.format(names=names), key_path, message)


def test_depends_on_at_its_limit() -> None:
    names = json.dumps([f"a{n}" for n in range(64)])
    (only,) = ok(HEAD + DEPENDENCY.format(names=names)).evals
    assert isinstance(only.profile, DependencyProfile) and len(only.profile.depends_on) == 64


@pytest.mark.parametrize("key", ["payload", "pass_schema", "fail_schema", "profile_variants"])
def test_a_dependency_eval_refuses_even_empty_tables(key: str) -> None:
    assert_problem(
        HEAD + DEPENDENCY.format(names='["a"]') + f"{key} = {{}}\n", f"evals.e.{key}", "only"
    )


def test_human_profile_takes_no_other_field() -> None:
    assert_problem(
        eval_text('{ kind = "human", timeout_ms = 5 }'), "evals.e.profile.timeout_ms", "unknown key"
    )


def test_runtime_profile() -> None:
    (only,) = ok(eval_text('{ kind = "runtime", command = "python3", args = ["t.py"] }')).evals
    assert only.profile == RuntimeProfile("python3", ("t.py",), RUNTIME_DEFAULT_TIMEOUT_MS)


def test_runtime_profile_required_fields() -> None:
    assert one_problem(eval_text('{ kind = "runtime", args = [] }')) == (
        "evals.e.profile",
        "missing required key `command`",
    )
    assert one_problem(eval_text('{ kind = "runtime", command = "c" }')) == (
        "evals.e.profile",
        "missing required key `args`",
    )


@pytest.mark.parametrize(
    ("command", "fragment"), [('""', "blank"), ('"c{x}"', "braces"), ('"a\\u0001"', "control")]
)
def test_runtime_command_rules(command: str, fragment: str) -> None:
    assert_problem(
        eval_text(f'{{ kind = "runtime", command = {command}, args = [] }}'),
        "evals.e.profile.command",
        fragment,
    )


def test_runtime_args_references() -> None:
    text = eval_text(
        '{ kind = "runtime", command = "c", args = ["--all", "{guide}/pages", "--g={glossary}"] }'
    )
    declaration = ok(text)
    assert declaration.references == (
        Reference("guide", ReferenceUse.RUNTIME_ARGV, "evals.e.profile.args[1]", "e", "pages"),
        Reference("glossary", ReferenceUse.RUNTIME_ARGV, "evals.e.profile.args[2]", "e", ""),
    )


def test_runtime_args_bad_operands() -> None:
    assert_problem(
        eval_text('{ kind = "runtime", command = "c", args = ["ok", "{x}/../y"] }'),
        "evals.e.profile.args[1]",
        "safe relative logical path",
    )
    assert_problem(
        eval_text('{ kind = "runtime", command = "c", args = ["a\\u0000b"] }'),
        "evals.e.profile.args[0]",
        "NUL",
    )


def test_agent_profile() -> None:
    profile = (
        '{ kind = "agent", backend = "anthropic", model = "EXACT", reasoning = "high",'
        " timeout_ms = 300000, max_tool_calls = 40, max_tokens = 500000 }"
    )
    (only,) = ok(eval_text(profile)).evals
    assert only.profile == AgentProfile("anthropic", "EXACT", "high", 300000, 40, 500000)


def test_agent_profile_defaults() -> None:
    (only,) = ok(eval_text('{ kind = "agent", backend = "openai", model = "m" }')).evals
    assert only.profile == AgentProfile("openai", "m", None, AGENT_DEFAULT_TIMEOUT_MS, None, None)


def test_agent_profile_required_fields() -> None:
    assert one_problem(eval_text('{ kind = "agent", model = "m" }')) == (
        "evals.e.profile",
        "missing required key `backend`",
    )
    assert one_problem(eval_text('{ kind = "agent", backend = "openai" }')) == (
        "evals.e.profile",
        "missing required key `model`",
    )
    assert_problem(
        eval_text('{ kind = "agent", backend = "openai-chat", model = " " }'),
        "evals.e.profile.model",
        "blank",
    )


def test_agent_backend_choices() -> None:
    assert_problem(
        eval_text('{ kind = "agent", backend = "gemini", model = "m" }'),
        "evals.e.profile.backend",
        "expected one of `openai`, `anthropic`, `openai-chat`",
    )


@pytest.mark.parametrize("backend", ["claude-code", "codex"])
def test_the_coding_agent_backends_are_accepted(backend: str) -> None:
    declaration = ok(
        eval_text(f'{{ kind = "agent", backend = "{backend}", model = "m", reasoning = "low" }}')
    )
    profile = declaration.evals[0].profile
    assert isinstance(profile, AgentProfile) and profile.backend == backend


def test_gemini_cli_is_refused_saying_why() -> None:
    path, message = one_problem(
        eval_text('{ kind = "agent", backend = "gemini-cli", model = "m" }')
    )
    assert path == "evals.e.profile.backend"
    assert "cannot switch off all of its built-in tools" in message


@pytest.mark.parametrize(("removed", "successor"), [("chatgpt", "openai"), ("claude", "anthropic")])
def test_removed_backends_name_their_replacement(removed: str, successor: str) -> None:
    path, message = one_problem(
        eval_text(f'{{ kind = "agent", backend = "{removed}", model = "m" }}')
    )
    assert path == "evals.e.profile.backend"
    assert f"`{removed}` backend was removed" in message
    assert f"`{successor}`" in message


@pytest.mark.parametrize(
    "url",
    [
        "https://example.openai.azure.com/openai/v1",
        "https://openrouter.ai/api/v1",
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000/v1",
        "http://[::1]:1234/v1",
        "HTTPS://gateway.example.com:4000",
    ],
)
def test_a_base_url_is_declared(url: str) -> None:
    profile = f'{{ kind = "agent", backend = "openai-chat", model = "m", base_url = "{url}" }}'
    (only,) = ok(eval_text(profile)).evals
    assert isinstance(only.profile, AgentProfile) and only.profile.base_url == url


@pytest.mark.parametrize(
    ("url", "fault"),
    [
        ("http://gateway.example.com/v1", "is not loopback, so it needs https://"),
        ("ftp://127.0.0.1", "its scheme is not https"),
        ("localhost:11434", "its scheme is not https"),
        ("https://user:pw@example.com", "must not contain credentials"),
        ("https://example.com/v1?key=1", "must not contain a query"),
        ("https://example.com/v1#x", "must not contain a fragment"),
        ("https:///v1", "has no host"),
        ("https://example.com /v1", "whitespace"),
        (" ", "blank"),
    ],
)
def test_a_bad_base_url_is_refused_naming_the_fix(url: str, fault: str) -> None:
    profile = f'{{ kind = "agent", backend = "openai", model = "m", base_url = "{url}" }}'
    path, message = one_problem(eval_text(profile))
    assert path == "evals.e.profile.base_url"
    assert fault in message
    if fault != "blank":
        assert "use an https:// URL, or http:// on localhost" in message


@pytest.mark.parametrize(
    ("backend", "good", "bad"),
    [
        (
            "openai",
            ["none", "minimal", "low", "medium", "high", "xhigh", "max"],
            ["extreme", "HIGH"],
        ),
        ("openai-chat", ["none", "minimal", "low", "medium", "high", "xhigh"], ["max", "x"]),
        ("anthropic", ["low", "medium", "high", "xhigh", "max"], ["none", "minimal"]),
    ],
)
def test_reasoning_per_backend(backend: str, good: list[str], bad: list[str]) -> None:
    for value in good:
        profile = f'{{ kind = "agent", backend = "{backend}", model = "m", reasoning = "{value}" }}'
        (only,) = ok(eval_text(profile)).evals
        assert isinstance(only.profile, AgentProfile) and only.profile.reasoning == value
    for value in bad:
        profile = f'{{ kind = "agent", backend = "{backend}", model = "m", reasoning = "{value}" }}'
        assert_problem(eval_text(profile), "evals.e.profile.reasoning", "expected one of")


@pytest.mark.parametrize(
    ("key", "camel"), [("max_tool_calls", "maxToolCalls"), ("max_tokens", "maxTokens")]
)
def test_agent_budgets_are_positive_integers(key: str, camel: str) -> None:
    base = '{ kind = "agent", backend = "openai", model = "m", '
    (only,) = ok(eval_text(base + f"{key} = 1 }}")).evals
    assert isinstance(only.profile, AgentProfile) and getattr(only.profile, key) == 1
    (only,) = ok(eval_text(base + f"{key} = {POSITIVE_INT_MAX} }}")).evals
    assert getattr(only.profile, key) == POSITIVE_INT_MAX
    path = f"evals.e.profile.{key}"
    assert_problem(eval_text(base + f"{key} = 0 }}"), path, "from 1 to")
    assert_problem(eval_text(base + f"{key} = {POSITIVE_INT_MAX + 1} }}"), path, "from 1 to")
    assert_problem(eval_text(base + f"{key} = true }}"), path, "got a boolean")
    assert_problem(
        eval_text(base + f"{camel} = 1 }}"),
        f"evals.e.profile.{camel}",
        f"unknown key `{camel}`; declarations use snake_case: write `{key}`",
    )


# --- timeouts ---------------------------------------------------------------------------

TIMEOUT_PROFILES = {
    "runtime": (
        '{ kind = "runtime", command = "c", args = [], timeout_ms = %s }',
        "evals.e.profile",
    ),
    "agent": (
        '{ kind = "agent", backend = "openai", model = "m", timeout_ms = %s }',
        "evals.e.profile",
    ),
}


def test_timeout_constants() -> None:
    assert (TIMEOUT_MS_MIN, TIMEOUT_MS_MAX) == (1, 2147483647)


@pytest.mark.parametrize("kind", sorted(TIMEOUT_PROFILES))
@pytest.mark.parametrize(
    ("value", "expected"),
    [(str(TIMEOUT_MS_MIN), 1), (str(TIMEOUT_MS_MAX), TIMEOUT_MS_MAX), ("1.0", 1)],
)
def test_timeout_in_range_passes(kind: str, value: str, expected: int) -> None:
    template, _ = TIMEOUT_PROFILES[kind]
    (only,) = ok(eval_text(template % value)).evals
    assert isinstance(only.profile, RuntimeProfile | AgentProfile)
    assert only.profile.timeout_ms == expected
    assert type(only.profile.timeout_ms) is int


@pytest.mark.parametrize("kind", sorted(TIMEOUT_PROFILES))
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (str(TIMEOUT_MS_MIN - 1), "expected an integer from 1 to 2147483647, got 0"),
        (str(TIMEOUT_MS_MAX + 1), "expected an integer from 1 to 2147483647, got 2147483648"),
        ("-5", "expected an integer from 1 to 2147483647, got -5"),
        ("1.5", "expected an integer, got a float"),
        ("true", "expected an integer, got a boolean"),
        ("false", "expected an integer, got a boolean"),
        ('"100"', "expected an integer, got a string"),
    ],
)
def test_timeout_out_of_range_or_wrong_type_fails(kind: str, value: str, fragment: str) -> None:
    template, path = TIMEOUT_PROFILES[kind]
    assert one_problem(eval_text(template % value)) == (f"{path}.timeout_ms", fragment)


def test_timeout_camel_case_hint() -> None:
    assert_problem(
        eval_text('{ kind = "runtime", command = "c", args = [], timeoutMs = 5 }'),
        "evals.e.profile.timeoutMs",
        "unknown key `timeoutMs`; declarations use snake_case: write `timeout_ms`",
    )


# --- evals: payload and schemas ---------------------------------------------------------


def test_payload_instruction_is_required() -> None:
    assert one_problem(
        HEAD + '[evals.e]\ntitle = "T"\nprofile = { kind = "human" }\npayload = { focus = 1 }'
    ) == ("evals.e.payload", "missing required key `instruction`")


@pytest.mark.parametrize("instruction", ['""', '"  "', '"\\n\\t"', "1", "[]", "true"])
def test_payload_instruction_must_be_a_nonblank_string(instruction: str) -> None:
    assert one_problem(eval_text('{ kind = "human" }', instruction=instruction)) == (
        "evals.e.payload.instruction",
        "must be a nonblank string",
    )


def test_payload_must_be_a_table() -> None:
    assert_problem(
        HEAD + '[evals.e]\ntitle = "T"\nprofile = { kind = "human" }\npayload = "x"',
        "evals.e.payload",
        "expected a table",
    )


def test_owner_payload_keys_are_preserved_verbatim() -> None:
    text = eval_text(
        '{ kind = "human" }',
        extra='payload.focus = ["auth", "pagination"]\npayload.camelCaseKey = { deep = [1, 2.5] }\n',
    )
    (only,) = ok(text).evals
    assert only.payload == {
        "instruction": "Look.",
        "focus": ["auth", "pagination"],
        "camelCaseKey": {"deep": [1, 2.5]},
    }


def test_instruction_references_are_collected() -> None:
    text = eval_text('{ kind = "human" }', instruction='"Compare {api} with ${HOME} and {{x}}."')
    assert ok(text).references == (
        Reference("api", ReferenceUse.INSTRUCTION, "evals.e.payload.instruction", "e"),
    )


def test_pass_and_fail_schemas() -> None:
    text = eval_text(
        '{ kind = "human" }',
        extra=(
            '[evals.e.pass_schema]\ntype = "object"\nrequired = ["checked"]\n'
            'properties.checked = { type = "integer", minimum = 1 }\n'
            '[evals.e.fail_schema]\ntype = "object"\n'
            'properties.problems = { type = "array", items = { "$ref" = "#/$defs/p" } }\n'
            '"$defs".p = { type = "string" }\n'
        ),
    )
    (only,) = ok(text).evals
    assert only.pass_schema is not None and only.pass_schema["required"] == ["checked"]
    assert only.fail_schema is not None and "$defs" in only.fail_schema


def test_result_schemas_do_not_need_a_type() -> None:
    ok(eval_text('{ kind = "human" }', extra="pass_schema = { required = [] }\n"))


@pytest.mark.parametrize("key", ["pass_schema", "fail_schema"])
def test_result_schemas_are_admitted(key: str) -> None:
    assert_problem(
        eval_text('{ kind = "human" }', extra=f'{key} = {{ minimum = "no" }}\n'),
        f"evals.e.{key}",
        "invalid JSON Schema at minimum",
    )
    assert_problem(
        eval_text('{ kind = "human" }', extra=f'{key} = {{ "$ref" = "https://x.invalid/s" }}\n'),
        f"evals.e.{key}",
        "is not local",
    )
    assert_problem(
        eval_text('{ kind = "human" }', extra=f'{key} = "object"\n'),
        f"evals.e.{key}",
        "a schema must be a table",
    )


# --- evals: profile variants -------------------------------------------------------------


def test_profile_variants_constant() -> None:
    assert PROFILE_VARIANTS_MAX == 64


def _variants(
    count: int, profile: str = '{ kind = "agent", backend = "openai", model = "m" }'
) -> str:
    body = "".join(f"v{i} = {profile}\n" for i in range(count))
    return eval_text(
        '{ kind = "agent", backend = "anthropic", model = "x" }',
        extra=f"[evals.e.profile_variants]\n{body}",
    )


def test_profile_variants_at_the_limit_pass() -> None:
    (only,) = ok(_variants(PROFILE_VARIANTS_MAX)).evals
    assert len(only.profile_variants) == PROFILE_VARIANTS_MAX
    assert only.profile_variants["v0"] == AgentProfile("openai", "m")


def test_profile_variants_one_past_the_limit_fail() -> None:
    assert one_problem(_variants(PROFILE_VARIANTS_MAX + 1)) == (
        "evals.e.profile_variants",
        f"at most {PROFILE_VARIANTS_MAX} variants, got {PROFILE_VARIANTS_MAX + 1}",
    )


def test_profile_variants_keep_the_eval_kind() -> None:
    assert_problem(
        _variants(1, '{ kind = "human" }'),
        "evals.e.profile_variants.v0",
        "a variant must keep the eval's kind `agent`, got `human`",
    )


def test_profile_variants_are_complete_valid_profiles() -> None:
    assert_problem(
        _variants(1, '{ kind = "agent", backend = "openai" }'),
        "evals.e.profile_variants.v0",
        "missing required key `model`",
    )
    assert_problem(
        _variants(1, '{ kind = "agent", backend = "openai", model = "m", timeout_ms = 0 }'),
        "evals.e.profile_variants.v0.timeout_ms",
        "from 1 to",
    )
    assert_problem(
        _variants(1, '"quick"'), "evals.e.profile_variants.v0", "expected a table, got a string"
    )


def test_profile_variant_names_are_identifiers() -> None:
    text = eval_text(
        '{ kind = "human" }', extra='[evals.e.profile_variants]\n"bad name" = { kind = "human" }\n'
    )
    path, message = one_problem(text)
    assert path == 'evals.e.profile_variants."bad name"'
    assert "profile variant name" in message


def test_runtime_variants_record_argv_references() -> None:
    text = eval_text(
        '{ kind = "runtime", command = "c", args = [] }',
        extra='profile_variants.full = { kind = "runtime", command = "c", args = ["{x}"] }\n',
    )
    assert ok(text).references == (
        Reference("x", ReferenceUse.RUNTIME_ARGV, "evals.e.profile_variants.full.args[0]", "e"),
    )


# --- Agent tools: built-ins ----------------------------------------------------------------


def agent_tool(body: str) -> str:
    return HEAD + "[views.agent_tools.t]\n" + body + "\n"


def one_agent_tool(body: str) -> BuiltinAgentTool | CommandAgentTool:
    (tool,) = ok(agent_tool(body)).agent_tools
    return tool


@pytest.mark.parametrize("builtin", ["read", "list", "glob", "grep", "view_image"])
def test_model_input_builtins_take_no_args(builtin: str) -> None:
    assert one_agent_tool(f'builtin = "{builtin}"') == BuiltinAgentTool("t", builtin, None, None)


@pytest.mark.parametrize("builtin", ["read", "list"])
def test_read_and_list_take_one_fixed_target(builtin: str) -> None:
    assert one_agent_tool(f'builtin = "{builtin}"\nargs = ["docs/a.md"]') == BuiltinAgentTool(
        "t", builtin, ("docs/a.md",), None
    )
    for args in ("[]", '["a", "b"]'):
        path, message = one_problem(agent_tool(f'builtin = "{builtin}"\nargs = {args}'))
        assert path == "views.agent_tools.t.args"
        assert "takes exactly 1 fixed argument(s)" in message


@pytest.mark.parametrize("builtin", ["glob", "grep", "view_image"])
@pytest.mark.parametrize("args", ["[]", '["x"]'])
def test_search_builtins_refuse_args(builtin: str, args: str) -> None:
    assert_problem(
        agent_tool(f'builtin = "{builtin}"\nargs = {args}'),
        "views.agent_tools.t.args",
        "fixed `args` are not allowed",
    )


def test_fixed_targets_are_logical_paths() -> None:
    assert_problem(
        agent_tool('builtin = "read"\nargs = ["../x"]'),
        "views.agent_tools.t.args[0]",
        "'..' component",
    )
    assert_problem(
        agent_tool('builtin = "read"\nargs = ["."]'), "views.agent_tools.t.args[0]", "'.' component"
    )
    assert_problem(
        agent_tool('builtin = "read"\nargs = [""]'), "views.agent_tools.t.args[0]", "it is empty"
    )
    assert_problem(
        agent_tool('builtin = "section"\nargs = ["/abs.md"]'),
        "views.agent_tools.t.args[0]",
        "empty component",
    )
    # list may name the root, and the lone "." of a file Artifact
    assert one_agent_tool('builtin = "list"\nargs = [""]').args == ("",)
    assert one_agent_tool('builtin = "list"\nargs = ["."]').args == (".",)


def test_section_takes_one_or_two_args() -> None:
    assert one_agent_tool('builtin = "section"\nargs = ["a.md"]').args == ("a.md",)
    assert one_agent_tool('builtin = "section"\nargs = ["a.md", "Usage"]').args == ("a.md", "Usage")
    assert_problem(
        agent_tool('builtin = "section"\nargs = []'), "views.agent_tools.t.args", "1 to 2"
    )
    assert_problem(
        agent_tool('builtin = "section"\nargs = ["a", "b", "c"]'),
        "views.agent_tools.t.args",
        "1 to 2",
    )
    assert_problem(
        agent_tool('builtin = "section"'), "views.agent_tools.t.builtin", "requires fixed `args`"
    )
    assert one_problem(agent_tool('builtin = "section"\nargs = ["a.md", " "]')) == (
        "views.agent_tools.t.args[1]",
        "Section heading must not be blank.",
    )


def test_help_takes_at_least_one_literal_name() -> None:
    assert one_agent_tool('builtin = "help"\nargs = ["git"]').args == ("git",)
    assert one_agent_tool('builtin = "help"\nargs = ["git", "log", "x"]').args == (
        "git",
        "log",
        "x",
    )
    assert_problem(
        agent_tool('builtin = "help"\nargs = []'), "views.agent_tools.t.args", "at least 1"
    )
    assert_problem(agent_tool('builtin = "help"'), "views.agent_tools.t.builtin", "requires fixed")
    assert_problem(
        agent_tool('builtin = "help"\nargs = [" "]'), "views.agent_tools.t.args[0]", "blank"
    )
    for index, args in ((0, '["{tool}"]'), (1, '["git", "x}"]'), (2, '["git", "log", "{"]')):
        assert_problem(
            agent_tool(f'builtin = "help"\nargs = {args}'),
            f"views.agent_tools.t.args[{index}]",
            "placeholders are not allowed",
        )


def test_graph_requires_empty_args() -> None:
    assert one_agent_tool('builtin = "graph"\nargs = []') == BuiltinAgentTool(
        "t", "graph", (), None
    )
    assert_problem(agent_tool('builtin = "graph"'), "views.agent_tools.t.builtin", "args = []")
    assert_problem(
        agent_tool('builtin = "graph"\nargs = ["x"]'), "views.agent_tools.t.args", "exactly 0"
    )


@pytest.mark.parametrize("builtin", ["open", "shell", "Read", ""])
def test_unknown_agent_builtins(builtin: str) -> None:
    path, message = one_problem(agent_tool(f'builtin = "{builtin}"'))
    assert path == "views.agent_tools.t.builtin"
    assert "expected one of" in message or "blank" in message


@pytest.mark.parametrize(
    "key", ["command", "protocol", "input_schema", "timeout_ms", "execution_paths"]
)
def test_builtins_refuse_command_fields(key: str) -> None:
    value = {"command": '"c"', "protocol": '"json"', "input_schema": "{}", "timeout_ms": "5"}.get(
        key, "[]"
    )
    assert one_problem(agent_tool(f'builtin = "read"\n{key} = {value}')) == (
        f"views.agent_tools.t.{key}",
        "a built-in reference takes only `builtin`, `args` and `description`",
    )


def test_builtin_refuses_session_and_kind() -> None:
    assert_problem(
        agent_tool('builtin = "read"\nsession = "app"'),
        "views.agent_tools.t.session",
        "built-in tools do not accept `session`",
    )
    assert_problem(
        agent_tool('builtin = "read"\nkind = "output"'), "views.agent_tools.t.kind", "no `kind`"
    )


def test_builtin_description() -> None:
    tool = one_agent_tool('builtin = "grep"\ndescription = "Search {artifactName}."')
    assert tool == BuiltinAgentTool("t", "grep", None, "Search {artifactName}.")
    assert_problem(
        agent_tool('builtin = "grep"\ndescription = " "'),
        "views.agent_tools.t.description",
        "blank",
    )
    assert_problem(
        agent_tool('builtin = "grep"\ndescription = "Search {other}."'),
        "views.agent_tools.t.description",
        "`{other}`",
    )


def test_tool_names_are_identifiers() -> None:
    path, message = one_problem(HEAD + '[views.agent_tools."bad name"]\nbuiltin = "read"\n')
    assert path == 'views.agent_tools."bad name"'
    assert "tool name" in message
    assert one_problem(HEAD + "[views.agent_tools]\nt = 1") == (
        "views.agent_tools.t",
        "expected a table describing the tool",
    )


# --- Agent tools: command tools ----------------------------------------------------------------


def command_tool(extra: str = "", *, protocol: str = "json", args: str = "[]") -> str:
    return agent_tool(
        f'description = "D"\nprotocol = "{protocol}"\ncommand = "c"\nargs = {args}\n{extra}'
    )


def test_command_tool_defaults() -> None:
    (tool,) = ok(command_tool()).agent_tools
    assert tool == CommandAgentTool(
        name="t",
        description="D",
        protocol="json",
        command="c",
        args=(),
        input_schema=DEFAULT_INPUT_SCHEMA,
        execution_paths=(),
        timeout_ms=COMMAND_TOOL_DEFAULT_TIMEOUT_MS,
        session=None,
    )
    assert dict(tool.input_schema) == {"type": "object", "additionalProperties": False}
    assert COMMAND_TOOL_DEFAULT_TIMEOUT_MS == 120000


def test_command_tool_required_fields() -> None:
    declaration, problems = parse(agent_tool(""))
    assert declaration is None
    assert problems == [
        ("views.agent_tools.t", f"missing required key `{key}`")
        for key in ("description", "protocol", "command", "args")
    ]


@pytest.mark.parametrize("missing", ["description", "protocol", "command", "args"])
def test_command_tool_each_required_field(missing: str) -> None:
    lines = {
        "description": 'description = "D"',
        "protocol": 'protocol = "json"',
        "command": 'command = "c"',
        "args": "args = []",
    }
    body = "\n".join(line for key, line in lines.items() if key != missing)
    assert one_problem(agent_tool(body)) == (
        "views.agent_tools.t",
        f"missing required key `{missing}`",
    )


@pytest.mark.parametrize("protocol", ["json", "plain"])
def test_protocol_choice(protocol: str) -> None:
    (tool,) = ok(command_tool(protocol=protocol)).agent_tools
    assert isinstance(tool, CommandAgentTool) and tool.protocol == protocol


@pytest.mark.parametrize("protocol", ["shell", "JSON", ""])
def test_unknown_protocol(protocol: str) -> None:
    path, _ = one_problem(command_tool(protocol=protocol))
    assert path == "views.agent_tools.t.protocol"


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("c{x}", "braces"),
        ("{cmd}", "braces"),
        ("c}", "braces"),
        (" ", "blank"),
        ("a\u0007", "control"),
    ],
)
def test_command_rules(command: str, fragment: str) -> None:
    text = agent_tool(
        f'description = "D"\nprotocol = "json"\ncommand = {json.dumps(command)}\nargs = []'
    )
    assert_problem(text, "views.agent_tools.t.command", fragment)


def test_command_tool_description_rules() -> None:
    assert_problem(
        command_tool().replace('description = "D"', 'description = ""'),
        "views.agent_tools.t.description",
        "blank",
    )
    assert_problem(
        command_tool().replace('description = "D"', 'description = "x}"'),
        "views.agent_tools.t.description",
        "stray brace",
    )


def test_command_tool_camel_case_hints() -> None:
    for camel, snake, value in (
        ("timeoutMs", "timeout_ms", "5"),
        ("inputSchema", "input_schema", "{}"),
        ("executionPaths", "execution_paths", "[]"),
    ):
        assert one_problem(command_tool(f"{camel} = {value}")) == (
            f"views.agent_tools.t.{camel}",
            f"unknown key `{camel}`; declarations use snake_case: write `{snake}`",
        )


@pytest.mark.parametrize("key", ["observation", "metadata", "script"])
def test_command_tool_removed_fields(key: str) -> None:
    path, message = one_problem(command_tool(f'{key} = "x"'))
    assert path == f"views.agent_tools.t.{key}"
    assert not message.startswith("unknown key")


def test_command_tool_refuses_kind() -> None:
    assert_problem(command_tool('kind = "launch"'), "views.agent_tools.t.kind", "views.human_tools")


def test_command_tool_timeout_boundaries() -> None:
    (tool,) = ok(command_tool(f"timeout_ms = {TIMEOUT_MS_MAX}")).agent_tools
    assert isinstance(tool, CommandAgentTool) and tool.timeout_ms == TIMEOUT_MS_MAX
    (tool,) = ok(command_tool("timeout_ms = 1.0")).agent_tools
    assert isinstance(tool, CommandAgentTool) and tool.timeout_ms == 1
    assert_problem(command_tool("timeout_ms = 0"), "views.agent_tools.t.timeout_ms", "got 0")
    assert_problem(
        command_tool(f"timeout_ms = {TIMEOUT_MS_MAX + 1}"),
        "views.agent_tools.t.timeout_ms",
        "got 2147483648",
    )
    assert_problem(command_tool("timeout_ms = true"), "views.agent_tools.t.timeout_ms", "boolean")


def test_json_tool_args_are_operands() -> None:
    declaration = ok(command_tool(args='["tools/links.py", "{glossary}/terms.csv", "--x={spec}"]'))
    assert declaration.references == (
        Reference(
            "glossary", ReferenceUse.TOOL_ARGV, "views.agent_tools.t.args[1]", None, "terms.csv"
        ),
        Reference("spec", ReferenceUse.TOOL_ARGV, "views.agent_tools.t.args[2]", None, ""),
    )
    assert_problem(
        command_tool(args='["{bad name}"]'), "views.agent_tools.t.args[0]", "not a valid reference"
    )


def test_input_schema_is_admitted_with_an_object_root() -> None:
    schema = '{ type = "object", properties = { page = { type = "string" } }, additionalProperties = false }'
    (tool,) = ok(command_tool(f"input_schema = {schema}")).agent_tools
    assert isinstance(tool, CommandAgentTool)
    assert tool.input_schema["properties"] == {"page": {"type": "string"}}
    assert_problem(
        command_tool('input_schema = { type = "string" }'),
        "views.agent_tools.t.input_schema",
        'type = "object"',
    )
    assert_problem(
        command_tool("input_schema = {}"), "views.agent_tools.t.input_schema", 'type = "object"'
    )
    assert_problem(
        command_tool(
            'input_schema = { type = "object", properties = { a = { "$ref" = "other.json" } } }'
        ),
        "views.agent_tools.t.input_schema",
        "not local",
    )


def test_execution_paths_constant() -> None:
    assert EXECUTION_PATHS_MAX == 64


def test_execution_paths_at_the_limit_pass() -> None:
    paths = [f"tools/p{i}" for i in range(EXECUTION_PATHS_MAX)]
    (tool,) = ok(command_tool(f"execution_paths = {toml_array(paths)}")).agent_tools
    assert isinstance(tool, CommandAgentTool) and tool.execution_paths == tuple(paths)


def test_execution_paths_one_past_the_limit_fail() -> None:
    paths = [f"tools/p{i}" for i in range(EXECUTION_PATHS_MAX + 1)]
    assert one_problem(command_tool(f"execution_paths = {toml_array(paths)}")) == (
        "views.agent_tools.t.execution_paths",
        f"at most {EXECUTION_PATHS_MAX} paths, got {EXECUTION_PATHS_MAX + 1}",
    )


def test_execution_paths_must_be_unique() -> None:
    assert one_problem(command_tool('execution_paths = ["a", "b", "a"]')) == (
        "views.agent_tools.t.execution_paths[2]",
        "duplicate path 'a'",
    )


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("", "empty"),
        ("/usr/bin/x", "empty component"),
        ("../outside", "'..'"),
        ("./x", "'.'"),
        ("C:/x", "colon"),
        ("a\\b", "backslash"),
        ("a\u0001", "control"),
    ],
)
def test_execution_path_rules(path: str, fragment: str) -> None:
    assert_problem(
        command_tool(f"execution_paths = [{json.dumps(path)}]"),
        "views.agent_tools.t.execution_paths[0]",
        fragment,
    )


def test_plain_placeholders_name_top_level_properties() -> None:
    schema = 'input_schema = { type = "object", properties = { q = { type = "string" }, n = {} } }'
    (tool,) = ok(
        command_tool(schema, protocol="plain", args='["{q}", "--q={q}", "x{q}y{n}", "{{lit}}"]')
    ).agent_tools
    assert isinstance(tool, CommandAgentTool)
    assert tool.args == ("{q}", "--q={q}", "x{q}y{n}", "{{lit}}")


def test_plain_placeholders_refuse_unknown_or_nested_names() -> None:
    nested = 'input_schema = { type = "object", properties = { a = { type = "object", properties = { q = {} } } } }'
    assert one_problem(command_tool(nested, protocol="plain", args='["ok", "{q}"]')) == (
        "views.agent_tools.t.args[1]",
        "Unknown plain tool placeholder: q (placeholders name top-level input_schema.properties)",
    )
    # the default schema has no properties at all
    assert_problem(
        command_tool(protocol="plain", args='["{q}"]'),
        "views.agent_tools.t.args[0]",
        "Unknown plain tool placeholder: q",
    )


def test_plain_template_errors_are_reported_per_argument() -> None:
    assert one_problem(command_tool(protocol="plain", args='["ok", "{q"]')) == (
        "views.agent_tools.t.args[1]",
        "Unclosed plain tool placeholder.",
    )
    assert one_problem(command_tool(protocol="plain", args='["}"]')) == (
        "views.agent_tools.t.args[0]",
        "Unmatched plain tool closing brace.",
    )
    assert one_problem(command_tool(protocol="plain", args='["{}"]')) == (
        "views.agent_tools.t.args[0]",
        "Invalid plain tool placeholder.",
    )


def test_plain_args_add_no_references() -> None:
    schema = 'input_schema = { type = "object", properties = { spec = {} } }'
    assert ok(command_tool(schema, protocol="plain", args='["{spec}"]')).references == ()


# --- sessions -----------------------------------------------------------------------------

SESSION = (
    "[views.agent_sessions.app]\n"
    'start = { command = "harness", args = ["start"], execution_paths = ["tools/harness"] }\n'
    'stop = { command = "harness", args = ["stop"], execution_paths = ["tools/harness"] }\n'
)


def test_session_and_bound_tool() -> None:
    declaration = ok(HEAD + SESSION + command_tool('session = "app"').removeprefix(HEAD))
    (session,) = declaration.agent_sessions
    assert session.name == "app"
    assert session.start == SessionCommand("harness", ("start",), ("tools/harness",))
    assert session.stop == SessionCommand("harness", ("stop",), ("tools/harness",))
    (tool,) = declaration.agent_tools
    assert isinstance(tool, CommandAgentTool) and tool.session == "app"


def test_plain_tools_may_bind_to_a_session_too() -> None:
    text = HEAD + SESSION + command_tool('session = "app"', protocol="plain").removeprefix(HEAD)
    ok(text)


def test_tool_bound_to_an_undeclared_session() -> None:
    assert one_problem(command_tool('session = "app"')) == (
        "views.agent_tools.t.session",
        "names session `app`, which this Artifact does not declare under "
        "[views.agent_sessions] (declared: none)",
    )
    text = HEAD + SESSION + command_tool('session = "other"').removeprefix(HEAD)
    assert one_problem(text) == (
        "views.agent_tools.t.session",
        "names session `other`, which this Artifact does not declare under "
        "[views.agent_sessions] (declared: `app`)",
    )


def test_session_name_rules_on_the_tool() -> None:
    path, message = one_problem(command_tool('session = "bad name"'))
    assert path == "views.agent_tools.t.session"
    assert "session name" in message
    assert_problem(command_tool('session = ""'), "views.agent_tools.t.session", "blank")


def test_session_start_and_stop_are_required() -> None:
    start_only = HEAD + '[views.agent_sessions.app]\nstart = { command = "h", args = [] }\n'
    assert one_problem(start_only) == ("views.agent_sessions.app", "missing required key `stop`")
    stop_only = HEAD + '[views.agent_sessions.app]\nstop = { command = "h", args = [] }\n'
    assert one_problem(stop_only) == ("views.agent_sessions.app", "missing required key `start`")


def test_session_commands_require_command_and_args() -> None:
    text = HEAD + SESSION.replace('command = "harness", args = ["stop"]', 'args = ["stop"]')
    assert one_problem(text) == ("views.agent_sessions.app.stop", "missing required key `command`")
    text = HEAD + SESSION.replace(', args = ["start"]', "")
    assert one_problem(text) == ("views.agent_sessions.app.start", "missing required key `args`")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("description", '"d"'),
        ("protocol", '"json"'),
        ("timeout_ms", "5"),
        ("concurrency", "1"),
        ("input_schema", "{}"),
        ("session", '"x"'),
    ],
)
def test_session_commands_take_only_command_args_and_execution_paths(key: str, value: str) -> None:
    text = HEAD + SESSION.replace('args = ["start"]', f'args = ["start"], {key} = {value}')
    assert one_problem(text) == (
        f"views.agent_sessions.app.start.{key}",
        "session `start` and `stop` take only `command`, `args` and `execution_paths`",
    )


@pytest.mark.parametrize("key", ["description", "protocol", "timeout_ms", "command", "args"])
def test_session_table_takes_only_start_and_stop(key: str) -> None:
    text = HEAD + SESSION + f"{key} = 1\n"
    assert one_problem(text) == (
        f"views.agent_sessions.app.{key}",
        "a session takes only `start` and `stop`",
    )


def test_session_names_are_identifiers() -> None:
    text = HEAD + SESSION.replace("agent_sessions.app", 'agent_sessions."bad name"')
    path, message = one_problem(text)
    assert path == 'views.agent_sessions."bad name"'
    assert "session name" in message
    assert one_problem(HEAD + "[views.agent_sessions]\napp = 1") == (
        "views.agent_sessions.app",
        "expected a table with `start` and `stop`",
    )


def test_session_args_are_operands_and_paths_are_checked() -> None:
    text = HEAD + SESSION.replace('args = ["start"]', 'args = ["start", "{spec}/x"]')
    assert ok(text).references == (
        Reference(
            "spec", ReferenceUse.TOOL_ARGV, "views.agent_sessions.app.start.args[1]", None, "x"
        ),
    )
    text = HEAD + SESSION.replace('args = ["stop"]', 'args = ["{x}/.."]')
    assert_problem(text, "views.agent_sessions.app.stop.args[0]", "safe relative logical path")
    text = HEAD + SESSION.replace(
        'execution_paths = ["tools/harness"] }\nstop', 'execution_paths = ["../h"] }\nstop'
    )
    assert_problem(text, "views.agent_sessions.app.start.execution_paths[0]", "'..'")
    text = HEAD + SESSION.replace(
        'command = "harness", args = ["stop"]', 'command = "h{x}", args = ["stop"]'
    )
    assert_problem(text, "views.agent_sessions.app.stop.command", "braces")


# --- Human tools ---------------------------------------------------------------------------


def human_tool(body: str) -> str:
    return HEAD + "[views.human_tools.t]\n" + body + "\n"


def human_command(extra: str = "", *, kind: str = "output", args: str = '["html"]') -> str:
    return human_tool(
        f'description = "D"\nkind = "{kind}"\ncommand = "make"\nargs = {args}\n{extra}'
    )


def one_human_tool(text: str) -> BuiltinHumanTool | CommandHumanTool:
    (tool,) = ok(text).human_tools
    return tool


@pytest.mark.parametrize("kind", ["launch", "output"])
def test_human_command_tool(kind: str) -> None:
    assert one_human_tool(human_command(kind=kind)) == CommandHumanTool(
        "t",
        "D",
        cast(Literal["launch", "output"], kind),
        "make",
        ("html",),
        COMMAND_TOOL_DEFAULT_TIMEOUT_MS,
    )


def test_human_command_tool_kind_is_required_and_chosen() -> None:
    assert_problem(human_command(kind="both"), "views.human_tools.t.kind", "`launch`, `output`")
    text = human_tool('description = "D"\ncommand = "make"\nargs = []')
    assert one_problem(text) == ("views.human_tools.t", "missing required key `kind`")


def test_human_command_tool_required_fields() -> None:
    declaration, problems = parse(human_tool(""))
    assert declaration is None
    assert problems == [
        ("views.human_tools.t", f"missing required key `{key}`")
        for key in ("description", "kind", "command", "args")
    ]


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("input_schema", "{}", "no free arguments"),
        ("session", '"app"', "do not accept `session`"),
        ("protocol", '"json"', "no `protocol`"),
        ("execution_paths", "[]", "`execution_paths`"),
    ],
)
def test_human_command_tool_refuses_agent_fields(key: str, value: str, fragment: str) -> None:
    assert_problem(human_command(f"{key} = {value}"), f"views.human_tools.t.{key}", fragment)


def test_human_command_tool_timeout() -> None:
    tool = one_human_tool(human_command("timeout_ms = 60000"))
    assert isinstance(tool, CommandHumanTool) and tool.timeout_ms == 60000
    assert_problem(human_command("timeout_ms = 0"), "views.human_tools.t.timeout_ms", "got 0")


def test_human_args_placeholders() -> None:
    args = '["{artifactPath}", "{artifactPath}/pages/index.md", "--glossary={glossary}/terms.csv", "-v"]'
    declaration = ok(human_command(args=args))
    assert declaration.references == (
        Reference(
            "glossary", ReferenceUse.HUMAN_ARGV, "views.human_tools.t.args[2]", None, "terms.csv"
        ),
    )


@pytest.mark.parametrize("arg", ["{a}{b}", "{a}/{b}", "x}", "{{x}}", "pre{a}", "{artifactPath}/x}"])
def test_human_args_refuse_other_braces(arg: str) -> None:
    assert one_problem(human_command(args=f'["ok", {json.dumps(arg)}]')) == (
        "views.human_tools.t.args[1]",
        "Human arguments support only {artifactPath} or {name}[/path] scope placeholders "
        "(optionally --flag=)",
    )


def test_human_builtins_imply_their_kind() -> None:
    tool = one_human_tool(human_tool('builtin = "open"\nargs = ["{artifactPath}/pages/index.md"]'))
    assert tool == BuiltinHumanTool("t", "open", ("{artifactPath}/pages/index.md",), None, "launch")
    tool = one_human_tool(human_tool('builtin = "read"\nargs = ["glossary/terms.csv"]'))
    assert tool == BuiltinHumanTool("t", "read", ("glossary/terms.csv",), None, "output")
    tool = one_human_tool(
        human_tool('builtin = "open"\nkind = "launch"\nargs = ["https://x.test"]')
    )
    assert isinstance(tool, BuiltinHumanTool) and tool.kind == "launch"


@pytest.mark.parametrize(
    ("builtin", "args", "declared", "implied"),
    [
        ("open", '["a"]', "output", "launch"),
        ("read", '["a"]', "launch", "output"),
        ("list", '["a"]', "launch", "output"),
        ("section", '["a.md", "H"]', "launch", "output"),
        ("help", '["git"]', "launch", "output"),
    ],
)
def test_human_builtin_kind_mismatch_is_refused(
    builtin: str, args: str, declared: str, implied: str
) -> None:
    text = human_tool(f'builtin = "{builtin}"\nkind = "{declared}"\nargs = {args}')
    assert one_problem(text) == (
        "views.human_tools.t.kind",
        f"the `{builtin}` built-in is of kind `{implied}`, not `{declared}`",
    )


def test_human_builtins_require_args() -> None:
    assert one_problem(human_tool('builtin = "read"')) == (
        "views.human_tools.t",
        "missing required key `args`",
    )


def test_human_open_arity_and_targets() -> None:
    for args in ("[]", '["a", "b"]'):
        assert_problem(
            human_tool(f'builtin = "open"\nargs = {args}'), "views.human_tools.t.args", "exactly 1"
        )
    one_human_tool(human_tool('builtin = "open"\nargs = ["http://localhost:8080/x"]'))
    for target in ("mailto:x@y", "file:///etc/passwd", "../x"):
        path, _ = one_problem(human_tool(f'builtin = "open"\nargs = [{json.dumps(target)}]'))
        assert path == "views.human_tools.t.args[0]"


def test_human_section_takes_exactly_two_args() -> None:
    one_human_tool(human_tool('builtin = "section"\nargs = ["a.md", "Usage"]'))
    assert_problem(
        human_tool('builtin = "section"\nargs = ["a.md"]'), "views.human_tools.t.args", "exactly 2"
    )


def test_human_builtin_targets_accept_placeholders_without_flags() -> None:
    declaration = ok(human_tool('builtin = "read"\nargs = ["{glossary}/terms.csv"]'))
    assert declaration.references == (
        Reference(
            "glossary", ReferenceUse.HUMAN_ARGV, "views.human_tools.t.args[0]", None, "terms.csv"
        ),
    )
    assert ok(human_tool('builtin = "open"\nargs = ["{artifactPath}"]')).references == ()
    assert_problem(
        human_tool('builtin = "read"\nargs = ["--f={artifactPath}"]'),
        "views.human_tools.t.args[0]",
        "without a flag prefix",
    )


@pytest.mark.parametrize("builtin", ["glob", "grep", "view_image", "shell"])
def test_human_builtins_exclude_model_input_tools(builtin: str) -> None:
    path, message = one_problem(human_tool(f'builtin = "{builtin}"\nargs = []'))
    assert path == "views.human_tools.t.builtin"
    assert "expected one of" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("session", '"app"'),
        ("input_schema", "{}"),
        ("protocol", '"json"'),
        ("command", '"c"'),
        ("timeout_ms", "5"),
    ],
)
def test_human_builtins_refuse_command_fields(key: str, value: str) -> None:
    path, _ = one_problem(human_tool(f'builtin = "read"\nargs = ["a"]\n{key} = {value}'))
    assert path == f"views.human_tools.t.{key}"


def test_human_tool_names_are_identifiers() -> None:
    path, message = one_problem(
        HEAD + '[views.human_tools."bad name"]\nbuiltin = "read"\nargs = ["a"]'
    )
    assert path == 'views.human_tools."bad name"'
    assert "tool name" in message


# --- a complete declaration ------------------------------------------------------------------------


def test_the_reference_example_parses() -> None:
    text = """
name = "api-guide"
tags = ["type:docs", "area:api"]
mounts = { glossary = "shared-terms" }
fingerprint = { files = ["pages", "openapi.yaml"], ignore = ["*.tmp"] }

[views.agent_tools]
read = { builtin = "read" }
find = { builtin = "grep", description = "Search the pages of {artifactName}." }
reference = { builtin = "section", args = ["pages/reference.md"] }

[views.agent_tools.lint]
description = "Check links in {artifactName}; pass page to check a single page."
protocol = "json"
command = "python3"
args = ["tools/links.py", "{glossary}/terms.csv"]
input_schema = { type = "object", properties = { page = { type = "string" } }, additionalProperties = false }
timeout_ms = 20000

[views.human_tools]
preview = { builtin = "open", args = ["{artifactPath}/pages/index.md"] }
terms = { builtin = "read", args = ["glossary/terms.csv"] }
render = { description = "Build {artifactName}.", kind = "output", command = "make", args = ["html"], timeout_ms = 60000 }

[evals.links]
title = "Every internal link resolves"
profile = { kind = "runtime", command = "python3", args = ["tools/links.py", "--all", "{api-guide}/pages"], timeout_ms = 15000 }
payload.instruction = "Check every relative link in {api-guide}."

[evals.accuracy]
title = "The guide agrees with openapi.yaml"
profile = { kind = "agent", backend = "anthropic", model = "EXACT_MODEL_ID", reasoning = "high", timeout_ms = 300000, max_tool_calls = 40, max_tokens = 500000 }

[evals.accuracy.profile_variants]
quick = { kind = "agent", backend = "openai", model = "OTHER_EXACT_ID", reasoning = "low" }

[evals.accuracy.payload]
instruction = \"\"\"
Compare each endpoint described in {api-guide} with openapi.yaml, using the \\
vocabulary in {glossary}. Answer GREEN when nothing contradicts the spec.\"\"\"
focus = ["auth", "pagination"]

[evals.accuracy.pass_schema]
type = "object"
required = ["checked"]
additionalProperties = false
properties.checked = { type = "integer", minimum = 1 }

[evals.approval]
title = "The API owner approves the guide"
profile = { kind = "human" }
payload.instruction = "Open {api-guide} with preview_api-guide and approve it if it can ship."
pass_schema = { type = "object", required = ["approved"], properties = { approved = { const = true } } }
"""
    declaration = ok(text)
    assert [e.id for e in declaration.evals] == ["accuracy", "approval", "links"]
    assert [t.name for t in declaration.agent_tools] == ["read", "find", "reference", "lint"]
    assert [t.name for t in declaration.human_tools] == ["preview", "terms", "render"]
    assert {(r.name, r.use) for r in declaration.references} == {
        ("glossary", ReferenceUse.TOOL_ARGV),
        ("api-guide", ReferenceUse.RUNTIME_ARGV),
        ("api-guide", ReferenceUse.INSTRUCTION),
        ("glossary", ReferenceUse.INSTRUCTION),
    }
