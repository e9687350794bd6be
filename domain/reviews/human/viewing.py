"""What a Human reviewer may look at without running a tool: the files of a request's scope.

The browser reviewer's viewers (text, Markdown, images) read through the same rules as the
built-ins a Human tool runs: the request's repository is reconnected (changed declarations
refuse), a path is logical and resolved against the eval's Artifact and its admitted scope
(mounts, children), and every component is opened pinned, without following a symbolic
link. So a viewer can show nothing a Human tool could not.

Both walks are bounded: a listing stops at ``VIEW_FILES_MAX`` files (and says it did), a
file over ``VIEW_FILE_MAX_BYTES`` is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from artifactize.domain.project.scope import eval_scope
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.reviews.human.reconnect import Reconnected, reconnect
from artifactize.domain.tools.builtins.listing import join_logical, list_location
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import SPECIAL_REFUSED, open_location
from artifactize.domain.tools.results import ToolError
from artifactize.ports.callbacks import WorkspaceLoader
from artifactize.ports.filesystem import EntryKind, FileHandle, Filesystem
from artifactize.ports.regex import RegexEngine
from artifactize.ports.state import ExecutionRecord, RequestRecord, StateStore
from artifactize.ports.statuses import VERDICT_STATUSES
from artifactize.ports.threads import WorkerThreads

VIEW_FILES_MAX = 2_000  # files a scope listing shows
VIEW_FILE_MAX_BYTES = 8 * 1024 * 1024  # bytes a viewer reads of one file
VIEW_DEPTH_MAX = 64  # folders below the eval's Artifact a listing descends
NOT_A_FILE = "Only a file can be viewed."
FILE_TOO_LARGE = f"The file is over the viewer's {VIEW_FILE_MAX_BYTES} bytes."


@dataclass(frozen=True)
class ScopeListing:
    """The files of a request's scope, as logical paths relative to the eval's Artifact."""

    files: tuple[str, ...]
    truncated: bool  # a bound cut the listing: the rest is not listed


@dataclass(frozen=True)
class ScopeViewer:
    """Reads the files of one waiting (or settled) request's recorded scope."""

    load: WorkspaceLoader[Workspace]
    filesystem: Filesystem
    regex: RegexEngine
    threads: WorkerThreads  # reopening the recorded repository reads its declarations

    async def _context(self, request: RequestRecord) -> BuiltinContext:
        reconnected: Reconnected = await reconnect(self.load, request, self.threads)
        workspace = reconnected.workspace
        qualified = reconnected.ref.qualified_id
        owner = qualified.split("/", 1)[0]
        return BuiltinContext(
            workspace, self.filesystem, self.regex, owner, eval_scope(workspace, qualified)
        )

    async def listing(self, request: RequestRecord) -> ScopeListing:
        """Every regular file reachable from the eval's Artifact, sorted, bounded."""
        context = await self._context(request)
        files: list[str] = []
        try:
            truncated = _walk(context, "", 0, files)
        except ToolError as exc:
            raise HumanReviewError(exc.message) from None
        return ScopeListing(tuple(files), truncated)

    async def read(self, request: RequestRecord, path: str) -> bytes:
        """The bytes of the file at logical ``path``; HumanReviewError says why not."""
        context = await self._context(request)
        try:
            location = context.locate(path)
            with open_location(
                context.filesystem, context.root_path, location, context.owner
            ) as opened:
                if opened.kind is EntryKind.DIRECTORY:
                    raise ToolError(NOT_A_FILE)
                if opened.kind is not EntryKind.FILE or opened.name is None:
                    raise ToolError(SPECIAL_REFUSED)
                with opened.parent.open_file(opened.name) as handle:
                    return _bounded(handle)
        except ToolError as exc:
            raise HumanReviewError(exc.message) from None


def _bounded(handle: FileHandle) -> bytes:
    """The whole file, or FILE_TOO_LARGE past the bound (also when it grows while read)."""
    if handle.size > VIEW_FILE_MAX_BYTES:
        raise ToolError(FILE_TOO_LARGE)
    data = bytearray()
    while chunk := handle.read(VIEW_FILE_MAX_BYTES + 1 - len(data)):
        data += chunk
        if len(data) > VIEW_FILE_MAX_BYTES:
            raise ToolError(FILE_TOO_LARGE)
    return bytes(data)


def _walk(context: BuiltinContext, folder: str, depth: int, files: list[str]) -> bool:
    """Add the files below ``folder`` to ``files``; True once a bound cut the listing
    (more than VIEW_FILES_MAX files, or a folder deeper than VIEW_DEPTH_MAX)."""
    location = context.locate(folder, allow_virtual_root=True)
    cut = False
    for entry in list_location(context, location):
        path = join_logical(folder, entry.name)
        if entry.kind == "file":
            if len(files) >= VIEW_FILES_MAX:
                return True
            files.append(path)
        elif entry.kind in ("directory", "mount"):
            if depth >= VIEW_DEPTH_MAX:
                cut = True
            elif _walk(context, path, depth + 1, files):
                return True
    return cut


# --- what changed since the last verdict --------------------------------------------------

ADDED = "added"
MODIFIED = "changed"
REMOVED = "removed"


@dataclass(frozen=True)
class SinceLastVerdict:
    """The files of the eval's Artifact that differ from its last verdict's.

    ``changes`` is None when either side has no per-file manifest ("not recorded": a record
    saved before manifests were, a script fingerprint, or none); ``verdict`` is None when
    the eval has no earlier verdict at all."""

    verdict: ExecutionRecord | None
    changes: tuple[tuple[str, str], ...] | None


def changed_files(
    before: Mapping[str, str] | None, after: Mapping[str, str] | None
) -> tuple[tuple[str, str], ...] | None:
    """``(path, added|changed|removed)`` sorted by path, or None when a side is unknown."""
    if before is None or after is None:
        return None
    changes = [
        (path, ADDED if path not in before else REMOVED if path not in after else MODIFIED)
        for path in sorted(set(before) | set(after))
        if before.get(path) != after.get(path)
    ]
    return tuple(changes)


def since_last_verdict(state: StateStore, request: RequestRecord) -> SinceLastVerdict:
    """Compare ``request``'s manifest with the newest GREEN/RED record of its eval (its own
    verdict excluded, so a settled request compares with the one before). Only its eval's
    records are read (``latest_records_of``): the web's request page asked for the newest
    record of every key, 10,000 decoded at 10,000 Artifacts (0.52 s against 0.09 s)."""
    own = request.execution_id
    last = next(
        (
            record
            for record in state.latest_records_of([request.eval_id])
            if record.status in VERDICT_STATUSES
            and record.data.eval_id == request.eval_id
            and record.id != own
        ),
        None,
    )
    if last is None:
        return SinceLastVerdict(None, ())
    before = last.data.file_manifest
    after = request.data.file_manifest
    return SinceLastVerdict(last, changed_files(before, after))
