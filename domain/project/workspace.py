"""The workspace: every Artifact, resolved against the others.

Cross-file rules live here: globally unique names, nearest-folder children, mounts,
``{name}`` references (a mount alias of the owner first, then a global Artifact name),
the relations between Artifacts, and published tool names (``<name>_<artifactId>``).
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from artifactize.domain.declarations.diagnostics import ConfigError, Problem
from artifactize.domain.declarations.model import (
    AgentSession,
    AgentTool,
    ArtifactKind,
    ArtifactsumFingerprint,
    Declaration,
    DependencyProfile,
    Eval,
    HumanTool,
    Reference,
    ReferenceUse,
)
from artifactize.domain.declarations.templates import Operand, TemplateError, parse_human_operand
from artifactize.domain.errors import UnknownName as UnknownName  # raised here
from artifactize.domain.project.discovery import DeclaredArtifact, Discovery, SourceFile
from artifactize.ports.ids import EvalId


class RelationKind(enum.Enum):
    CHILD = "child"
    MOUNT = "mount"
    INSTRUCTION = "instruction"
    ARGV = "argv"
    DEPENDENCY = "dependency"  # a dependency eval's ``depends_on`` target


@dataclass(frozen=True)
class Relation:
    """An edge from a consumer Artifact to one of its inputs."""

    consumer: str
    input: str
    kind: RelationKind
    eval_id: str | None = None
    label: str = ""  # the child prefix or mount alias, when there is one


@dataclass(frozen=True)
class Artifact:
    name: str
    kind: ArtifactKind
    path: str  # workspace-relative; "" is the workspace root
    folder: str  # working folder: the folder itself, or a file Artifact's containing folder
    target: str | None
    declaration: Declaration
    source: SourceFile
    parent: str | None
    children: Mapping[str, str]  # child prefix (e.g. "rules" or "a/b") -> Artifact name
    mounts: Mapping[str, str]  # alias -> Artifact name

    @property
    def evals(self) -> tuple[Eval, ...]:
        return self.declaration.evals

    @property
    def agent_tools(self) -> tuple[AgentTool, ...]:
        return self.declaration.agent_tools

    @property
    def human_tools(self) -> tuple[HumanTool, ...]:
        return self.declaration.human_tools

    @property
    def agent_sessions(self) -> tuple[AgentSession, ...]:
        return self.declaration.agent_sessions

    def eval(self, eval_id: str) -> Eval | None:
        return next((e for e in self.evals if e.id == eval_id), None)


@dataclass(frozen=True)
class EvalRef:
    artifact: Artifact
    eval: Eval

    @property
    def qualified_id(self) -> EvalId:
        return EvalId(f"{self.artifact.name}/{self.eval.id}")


DID_YOU_MEAN = "; did you mean `{name}`?"
DID_YOU_MEAN_CUTOFF = 0.75  # difflib's similarity ratio a near miss must reach


def content_digest(workspace: Workspace) -> str:
    """A digest of what the workspace is made of: each Artifact's declaration source (its
    path and text) and where it stands (name, kind, path, folder, target, parent), the
    nested repositories and the gates' rule. Everything else a workspace holds (the parsed
    declarations, the relations, the definition hashes) is derived from these by this code,
    so two workspaces with one digest are the same (a stored ``status`` answer is keyed by
    it, with the code's own stamp). One JSON encoding, not a hash update per field: 10,000
    Artifacts cost ~25 ms."""
    parts = [
        [a.name, a.kind.value, a.path, a.folder, a.target, a.parent, a.source.path, a.source.text]
        for a in workspace.artifacts.values()
    ]
    document = [workspace.root_path, workspace.dependency_gates, workspace.nested_repositories]
    text = json.dumps([*document, parts], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean `x`?`` for the closest declared name, or "" when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=DID_YOU_MEAN_CUTOFF)
    return DID_YOU_MEAN.format(name=close[0]) if close else ""


@dataclass(frozen=True)
class Workspace:
    root_path: str
    artifacts: Mapping[str, Artifact]  # in discovery order (sorted walk)
    relations: tuple[Relation, ...]
    eval_inputs: Mapping[str, tuple[str, ...]]  # "artifact/eval" -> referenced Artifacts
    dependency_gates: str
    nested_repositories: tuple[str, ...] = ()  # other repositories below, not walked
    # "artifact/eval" -> (the eval, its definition hash with its own profile), as discovery
    # computed it for the file index or found it kept there with the declaration. Held with
    # the very ``Eval`` it was computed from: ``kept_def_hash`` answers only for that object.
    # An optimisation only: not part of what the workspace is (equality, repr).
    def_hashes: Mapping[str, tuple[Eval, str]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @cached_property
    def inputs(self) -> Mapping[str, tuple[str, ...]]:
        """Consumer -> its distinct direct inputs, in relation order.

        Built once per workspace (the workspace is frozen): every graph walk reads this
        instead of scanning ``relations``, which kept ``required_closure`` per Artifact
        quadratic in the number of Artifacts."""
        found: dict[str, dict[str, None]] = {}
        for relation in self.relations:
            found.setdefault(relation.consumer, {})[relation.input] = None
        return {consumer: tuple(targets) for consumer, targets in found.items()}

    @cached_property
    def order(self) -> Mapping[str, int]:
        """Artifact name -> its position in configuration order."""
        return {name: index for index, name in enumerate(self.artifacts)}

    @cached_property
    def relations_of(self) -> Mapping[str, tuple[Relation, ...]]:
        """Consumer -> its relations, in order (one pass over ``relations``)."""
        found: dict[str, list[Relation]] = {}
        for relation in self.relations:
            found.setdefault(relation.consumer, []).append(relation)
        return {consumer: tuple(items) for consumer, items in found.items()}

    def artifact(self, name: str) -> Artifact:
        try:
            return self.artifacts[name]
        except KeyError:
            raise UnknownName(
                f"Unknown Artifact: {name}{did_you_mean(name, self.artifacts)}"
            ) from None

    def evals(self) -> Iterator[EvalRef]:
        for artifact in self.artifacts.values():
            for item in artifact.evals:
                yield EvalRef(artifact, item)

    @cached_property
    def _found_evals(self) -> dict[str, EvalRef]:
        """``find_eval``'s answers so far (a key, its dependencies and a status each asked
        for the same eval: four scans of its Artifact's evals per eval at 10,000)."""
        return {}

    def find_eval(self, qualified_id: str) -> EvalRef:
        known_ref = self._found_evals.get(qualified_id)
        if known_ref is not None:
            return known_ref
        artifact_name, _, eval_id = qualified_id.partition("/")
        artifact = self.artifacts.get(artifact_name)
        found = artifact.eval(eval_id) if artifact is not None and eval_id else None
        if artifact is None or found is None:
            known = [ref.qualified_id for ref in self.evals()]
            raise UnknownName(f"Unknown eval: {qualified_id}{did_you_mean(qualified_id, known)}")
        ref = self._found_evals[qualified_id] = EvalRef(artifact, found)
        return ref

    def kept_def_hash(self, ref: EvalRef) -> str | None:
        """The eval's definition hash (with its own profile) kept with its declaration;
        None when none is (computed then, as ``keys.eval_def_hash`` does)."""
        kept = self.def_hashes.get(f"{ref.artifact.name}/{ref.eval.id}")
        return kept[1] if kept is not None and kept[0] is ref.eval else None

    def resolve_name(self, owner: Artifact, name: str) -> Artifact | None:
        """``{name}`` as ``owner`` writes it: a mount alias first, then a global name."""
        target = owner.mounts.get(name, name)
        return self.artifacts.get(target)


def build_workspace(discovery: Discovery) -> Workspace:
    """Resolve discovered declarations; raises ``ConfigError`` with every cross-file problem."""
    return _Builder(discovery).build()


PUBLISHED_TOOL_NAME_MAX = 64
"""Longest name an Agent tool is published under: OpenAI and Anthropic cap function names
at 64 characters, and a longer one fails the first model request."""
AGENT_VIEWS = ("agent_tools", "agent_sessions")


def published_name(tool_name: str, artifact_name: str) -> str:
    """The name a tool is published under: ``<name>_<artifactId>``."""
    return f"{tool_name}_{artifact_name}"


class _Builder:
    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery
        self.problems: list[Problem] = []
        self.declared: dict[str, DeclaredArtifact] = {}
        self.relations: list[Relation] = []

    def fail(self, declared: DeclaredArtifact, key_path: str, message: str) -> None:
        self.problems.append(declared.source.locate(key_path, message))

    def build(self) -> Workspace:
        self._unique_names()
        children, parents = self._children()
        for declared in self.declared.values():
            self._check_mounts(declared)
        artifacts = {
            name: Artifact(
                name=name,
                kind=d.kind,
                path=d.path,
                folder=d.folder,
                target=d.target,
                declaration=d.declaration,
                source=d.source,
                parent=parents.get(name),
                children=children.get(name, {}),
                mounts=d.declaration.mounts,
            )
            for name, d in self.declared.items()
        }
        eval_inputs = self._references(artifacts)
        self._dependency_targets(artifacts, eval_inputs)
        for artifact in artifacts.values():
            self._check_fingerprint_scope(artifact)
            self._check_artifact_path_suffixes(artifact)
        self._check_published_names(artifacts)
        if self.problems:
            raise ConfigError(self.problems)
        root = next(
            (a for a in artifacts.values() if a.path == "" and a.kind is ArtifactKind.FOLDER), None
        )
        gates = (root.declaration.dependency_gates if root else None) or "green"
        return Workspace(
            self.discovery.root_path,
            artifacts,
            tuple(self.relations),
            eval_inputs,
            gates,
            tuple(self.discovery.nested_repositories),
            self._def_hashes(),
        )

    def _def_hashes(self) -> dict[str, tuple[Eval, str]]:
        """Each eval's definition hash that discovery computed or found kept."""
        found: dict[str, tuple[Eval, str]] = {}
        for name, declared in self.declared.items():
            evals = declared.declaration.evals
            if declared.eval_hashes and len(declared.eval_hashes) == len(evals):
                for item, hashed in zip(evals, declared.eval_hashes, strict=True):
                    found[f"{name}/{item.id}"] = (item, hashed)
        return found

    def _unique_names(self) -> None:
        for declared in self.discovery.artifacts:
            first = self.declared.get(declared.name)
            if first is not None:
                self.fail(
                    declared,
                    "name",
                    f"Artifact name `{declared.name}` is already declared by {first.source.path}; "
                    "names are unique across the workspace",
                )
                continue
            self.declared[declared.name] = declared

    def _children(self) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
        """Nearest-folder ownership: a folder Artifact is a child of the closest one above."""
        by_folder = {
            d.path: d.name for d in self.declared.values() if d.kind is ArtifactKind.FOLDER
        }
        children: dict[str, dict[str, str]] = {}
        parents: dict[str, str] = {}
        for declared in self.declared.values():
            if declared.kind is not ArtifactKind.FOLDER or declared.owner is None:
                continue  # file Artifacts are never children
            parent = by_folder.get(declared.owner)
            if parent is None:
                continue
            prefix = declared.path[len(declared.owner) + 1 :] if declared.owner else declared.path
            children.setdefault(parent, {})[prefix] = declared.name
            parents[declared.name] = parent
            self.relations.append(Relation(parent, declared.name, RelationKind.CHILD, label=prefix))
        return children, parents

    def _check_mounts(self, declared: DeclaredArtifact) -> None:
        for alias, target in declared.declaration.mounts.items():
            key_path = f"mounts.{alias}"
            if target not in self.declared:
                self.fail(declared, key_path, f"mounts unknown Artifact `{target}`")
            elif target == declared.name:
                self.fail(declared, key_path, "an Artifact cannot mount itself")
            elif declared.kind is ArtifactKind.FOLDER and alias in declared.folder_entries:
                self.fail(
                    declared,
                    key_path,
                    f"mount alias `{alias}` clashes with the entry `{alias}` in the folder; "
                    "rename the alias",
                )
            elif alias in self.declared and alias != target:
                self.fail(
                    declared,
                    key_path,
                    f"mount alias `{alias}` is also the name of another Artifact; "
                    f"`{{{alias}}}` would be ambiguous",
                )
            else:
                self.relations.append(
                    Relation(declared.name, target, RelationKind.MOUNT, label=alias)
                )

    def _references(self, artifacts: Mapping[str, Artifact]) -> dict[str, tuple[str, ...]]:
        inputs: dict[str, list[str]] = {}
        # A relation's kind is part of its equality, so only an instruction or argv relation
        # made here can repeat one: each is known by its fields (the kind by its value,
        # hashed in C; a dataclass hashes in Python), and a set, not a list scan, holds them.
        seen: set[tuple[str, str, str, str]] = set()
        for artifact in artifacts.values():
            name = artifact.name
            for item in artifact.evals:
                inputs[f"{name}/{item.id}"] = []
            for reference in artifact.declaration.references:
                resolved = self._resolve(artifacts, artifact, reference)
                eval_id = reference.eval_id
                if resolved is None or eval_id is None:
                    continue
                use = reference.use
                if use is not ReferenceUse.INSTRUCTION and use is not ReferenceUse.RUNTIME_ARGV:
                    continue
                listed = inputs[f"{name}/{eval_id}"]
                target = resolved.name
                if target not in listed:
                    listed.append(target)
                if target != name:
                    kind = (
                        RelationKind.INSTRUCTION
                        if use is ReferenceUse.INSTRUCTION
                        else RelationKind.ARGV
                    )
                    key = (name, target, kind.value, eval_id)
                    if key not in seen:
                        seen.add(key)
                        self.relations.append(Relation(name, target, kind, eval_id))
        return {key: tuple(names) for key, names in inputs.items()}

    def _dependency_targets(
        self, artifacts: Mapping[str, Artifact], eval_inputs: dict[str, tuple[str, ...]]
    ) -> None:
        """Resolve every dependency eval's ``depends_on`` (a mount alias of the declaring
        Artifact first, then a global name) into ``eval_inputs`` and ``dependency``
        relations; then refuse wait cycles between dependency evals."""
        seen: set[tuple[str, str, str]] = set()  # only a dependency relation can repeat one
        for artifact in artifacts.values():
            for item in artifact.evals:
                profile = item.profile
                if not isinstance(profile, DependencyProfile):
                    continue
                declared = self.declared[artifact.name]
                targets: list[str] = []
                for index, name in enumerate(profile.depends_on):
                    key_path = f"evals.{item.id}.profile.depends_on[{index}]"
                    target = artifact.mounts.get(name, name)
                    if target not in artifacts:
                        self.fail(
                            declared,
                            key_path,
                            f"`{name}` names no Artifact and no mount alias of `{artifact.name}`",
                        )
                    elif target == artifact.name:
                        self.fail(
                            declared,
                            key_path,
                            "a dependency eval cannot depend on its own Artifact",
                        )
                    elif target in targets:
                        self.fail(declared, key_path, f"`{name}` names `{target}` a second time")
                    else:
                        targets.append(target)
                        key = (artifact.name, target, item.id)
                        if key not in seen:
                            seen.add(key)
                            self.relations.append(
                                Relation(artifact.name, target, RelationKind.DEPENDENCY, item.id)
                            )
                eval_inputs[f"{artifact.name}/{item.id}"] = tuple(targets)
        self._check_wait_cycles(artifacts, eval_inputs)

    def _check_wait_cycles(
        self, artifacts: Mapping[str, Artifact], eval_inputs: Mapping[str, tuple[str, ...]]
    ) -> None:
        """A dependency eval waits for every eval of its targets; two that wait for each
        other (directly or around a longer loop) could never settle."""
        waits: dict[str, list[str]] = {}
        for artifact in artifacts.values():
            for item in artifact.evals:
                if isinstance(item.profile, DependencyProfile):
                    qualified = f"{artifact.name}/{item.id}"
                    waits[qualified] = [
                        f"{target}/{other.id}"
                        for target in eval_inputs.get(qualified, ())
                        for other in artifacts[target].evals
                        if isinstance(other.profile, DependencyProfile)
                    ]
        done: set[str] = set()
        for start in waits:
            path: list[str] = []
            on_path: set[str] = set()
            stack = [(start, iter(waits[start]))]
            path.append(start)
            on_path.add(start)
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    path.pop()
                    on_path.discard(node)
                    done.add(node)
                    continue
                if child in on_path:
                    loop = [*path[path.index(child) :], child]
                    owner, _, eval_id = child.partition("/")
                    self.fail(
                        self.declared[owner],
                        f"evals.{eval_id}.profile.depends_on",
                        f"dependency evals wait for each other: {' -> '.join(loop)}",
                    )
                    return
                if child not in done:
                    path.append(child)
                    on_path.add(child)
                    stack.append((child, iter(waits[child])))

    def _resolve(
        self, artifacts: Mapping[str, Artifact], owner: Artifact, reference: Reference
    ) -> Artifact | None:
        target = artifacts.get(owner.mounts.get(reference.name, reference.name))
        if target is None:
            self.fail(
                self.declared[owner.name],
                reference.key_path,
                f"`{{{reference.name}}}` names no Artifact and no mount alias of `{owner.name}`",
            )
            return None
        if target.kind is ArtifactKind.FILE and reference.suffix:
            self.fail(
                self.declared[owner.name],
                reference.key_path,
                f"`{{{reference.name}}}` is a file Artifact; a reference to it takes no /path suffix",
            )
            return None
        return target

    def _check_fingerprint_scope(self, artifact: Artifact) -> None:
        fingerprint = artifact.declaration.fingerprint
        if artifact.kind is not ArtifactKind.FOLDER or not isinstance(
            fingerprint, ArtifactsumFingerprint
        ):
            return
        for index, path in enumerate(fingerprint.files):
            first = path.split("/", 1)[0]
            entered = next(
                (p for p in artifact.children if path == p or path.startswith(p + "/")), None
            )
            if first in artifact.mounts:
                message = f"{path!r} enters the mount `{first}`; fingerprint only the owner's files"
            elif entered is not None:
                message = (
                    f"{path!r} enters the child Artifact `{artifact.children[entered]}`; "
                    "it is fingerprinted on its own"
                )
            else:
                continue
            self.fail(self.declared[artifact.name], f"fingerprint.files[{index}]", message)

    def _check_artifact_path_suffixes(self, artifact: Artifact) -> None:
        """``{artifactPath}`` of a file Artifact is the file itself: no ``/path`` below it."""
        if artifact.kind is not ArtifactKind.FILE:
            return
        for tool in artifact.human_tools:
            for index, arg in enumerate(tool.args):
                operand = _human_operand(arg)
                if operand is not None and operand.name == "artifactPath" and operand.suffix:
                    self.fail(
                        self.declared[artifact.name],
                        f"views.human_tools.{tool.name}.args[{index}]",
                        "`{artifactPath}` of a file Artifact names the file itself; "
                        "it takes no /path suffix",
                    )

    def _check_published_names(self, artifacts: Mapping[str, Artifact]) -> None:
        views: tuple[tuple[str, Callable[[Artifact], list[str]]], ...] = (
            ("agent_tools", lambda a: [t.name for t in a.agent_tools]),
            ("human_tools", lambda a: [t.name for t in a.human_tools]),
            ("agent_sessions", lambda a: [s.name for s in a.agent_sessions]),
        )
        for view, names_of in views:
            seen: dict[str, tuple[Artifact, str]] = {}
            for artifact in artifacts.values():
                for name in names_of(artifact):
                    published = published_name(name, artifact.name)
                    if view in AGENT_VIEWS and len(published) > PUBLISHED_TOOL_NAME_MAX:
                        self.fail(
                            self.declared[artifact.name],
                            f"views.{view}.{name}",
                            f"Agent tool name {published} is {len(published)} characters; "
                            f"model APIs accept at most {PUBLISHED_TOOL_NAME_MAX} "
                            "(<tool>_<Artifact>): shorten the tool or the Artifact name",
                        )
                    first = seen.get(published)
                    if first is None:
                        seen[published] = (artifact, name)
                        continue
                    other, other_name = first
                    self.fail(
                        self.declared[artifact.name],
                        f"views.{view}.{name}",
                        f"Artifact tool names collide: {published} (also published by "
                        f"`views.{view}.{other_name}` of {other.source.path})",
                    )


def _human_operand(arg: str) -> Operand | None:
    """The placeholder a Human argument holds; None for a literal (or an already refused) one."""
    try:
        return parse_human_operand(arg)
    except TemplateError:
        return None
