"""An Artifact's fingerprint, in whichever form it declares (reference/declarations.md §3.1).

- omitted or a ``files``/``ignore`` table: the artifactsum (``domain.reviews.reuse.artifactsum``);
- ``script = {...}``: the stdout of an owner script, run through ``FingerprintScripts``;
- ``false``: no fingerprint (None), so no eval on the Artifact has a reuse key.

Fingerprints are computed only at preparation and at the end-of-review recheck.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from artifactize.domain.declarations.model import (
    ArtifactsumFingerprint,
    NoFingerprint,
    ScriptFingerprint,
)
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.reviews.reuse.artifactsum import (
    DEFAULT_LIMITS,
    ArtifactsumLimits,
    ArtifactsumResult,
    GitignoreMemo,
    OpenFolders,
    compute_artifactsum,
)
from artifactize.domain.reviews.reuse.errors import FingerprintError, NeedsScript
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import Filesystem

__all__ = [
    "SCRIPT_OUTPUT_MAX_CHARS",
    "ArtifactsumResult",
    "ComputedFingerprint",
    "FingerprintError",
    "FingerprintScripts",
    "compute_artifactsum",
    "compute_fingerprint",
    "script_output_value",
]

SCRIPT_OUTPUT_MAX_CHARS = 128
SCRIPT_OUTPUT_CHARACTERS = "A-Za-z0-9._:-"
_SCRIPT_CHARACTER = re.compile(f"[{SCRIPT_OUTPUT_CHARACTERS}]")
SCRIPTS_UNSUPPORTED = "fingerprint scripts are not supported in this version"


class FingerprintScripts(Protocol):
    """Runs an owner's fingerprint script (§3.1 "Script fingerprint").

    The implementation runs ``script.command`` with ``script.args`` (``{name}`` references
    resolved) in the owner's working folder, stdin ``{"version":1,"artifactId":"<name>"}``,
    an environment of PATH and LANG plus private HOME/TMP/output folders that it deletes
    afterwards, and ``script.timeout_ms``; it checks ``script.files`` (they must exist, no
    symlinks). It returns the raw stdout bytes: the domain validates them with
    ``script_output_value``. A nonzero exit, a timeout, a missing file or a failed cleanup
    raises ``FingerprintError`` naming the Artifact (stderr is never shown). The process
    implementation is ``domain.reviews.reuse.scripts``; where ports hold ``None``
    instead, scripts are "not supported" (``SCRIPTS_UNSUPPORTED``).
    """

    def run(self, workspace: Workspace, artifact: Artifact, script: ScriptFingerprint) -> bytes:
        """The raw stdout; ``workspace`` is the one being fingerprinted (a recheck reloads
        it), for the owner's folder and the ``{name}`` operands."""
        ...


@dataclass(frozen=True)
class ComputedFingerprint:
    value: str  # "artifactsum:<64 hex>" or the script's literal value
    manifest: Mapping[str, Any] | None = None  # artifactsum only


def script_output_value(stdout: bytes) -> str:
    """The fingerprint a script printed: 1-128 of ``[A-Za-z0-9._:-]``, then at most one LF.

    Nothing is trimmed: a leading space, a CR or a second line break is an error.
    """
    body = stdout[:-1] if stdout.endswith(b"\n") else stdout
    text = body.decode("ascii", "replace")
    if not text:
        problem = "it is empty"
    elif len(text) > SCRIPT_OUTPUT_MAX_CHARS:
        problem = f"it has {len(text)} characters"
    else:
        bad = next((i for i, c in enumerate(text) if not _SCRIPT_CHARACTER.fullmatch(c)), None)
        if bad is None:
            return text
        problem = f"byte {bad + 1} is {body[bad : bad + 1]!r}"
    raise FingerprintError(
        f"fingerprint script output must be 1-{SCRIPT_OUTPUT_MAX_CHARS} characters of "
        f"[{SCRIPT_OUTPUT_CHARACTERS}], optionally followed by one line feed, and is not "
        f"trimmed; {problem}"
    )


def compute_fingerprint(
    workspace: Workspace,
    artifact_name: str,
    filesystem: Filesystem,
    scripts: FingerprintScripts | None = None,
    *,
    limits: ArtifactsumLimits = DEFAULT_LIMITS,
    index: FileIndex | None = None,
    gitignores: GitignoreMemo | None = None,
    folders: OpenFolders | None = None,
    without_scripts: bool = False,
) -> ComputedFingerprint | None:
    """The Artifact's fingerprint, or None when it declares ``fingerprint = false``;
    ``index``: the file index an artifactsum reads known digests from; ``gitignores``: the
    ``.gitignore`` files already read by this computation (``artifactsum.GitignoreMemo``);
    ``folders``: the folders it holds open (``artifactsum.OpenFolders``);
    ``without_scripts``: ``NeedsScript`` instead of running a fingerprint script."""
    artifact = workspace.artifact(artifact_name)
    declared = artifact.declaration.fingerprint
    if isinstance(declared, NoFingerprint):
        return None
    if isinstance(declared, ArtifactsumFingerprint):
        result = compute_artifactsum(
            workspace,
            artifact_name,
            filesystem,
            limits=limits,
            index=index,
            gitignores=gitignores,
            folders=folders,
        )
        return ComputedFingerprint(result.value, result.manifest)
    if without_scripts:
        raise NeedsScript(artifact.name)
    if scripts is None:
        raise FingerprintError(f"Artifact `{artifact.name}`: {SCRIPTS_UNSUPPORTED}")
    stdout = scripts.run(workspace, artifact, declared)
    try:
        return ComputedFingerprint(script_output_value(stdout))
    except FingerprintError as exc:
        raise FingerprintError(f"Artifact `{artifact.name}`: {exc.message}") from None
