"""The environment a runtime eval's command sees (reference/declarations.md §4.4).

Nothing of the caller's environment is inherited except ``PATH`` and ``LANG``: no secrets,
no ``ARTIFACTIZE_*`` settings, not the caller's ``HOME``; only where rustup and cargo keep
their toolchains (``TOOLCHAIN_HOMES``) is passed on, so ``cargo test`` can start. The command gets its own private
home, cache, temporary and output directories instead, all inside one fresh private
directory per invocation that is removed when the command has ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from artifactize.domain.tools.commands.running import DEFAULT_LANG
from artifactize.ports.scratch import ScratchSpace

# The only variables a runtime command inherits from the caller (an empty value counts as
# unset; LANG then falls back to DEFAULT_LANG).
INHERITED_VARIABLES = ("PATH", "LANG")
# Where rustup keeps its toolchains and cargo its registry: without them, the cargo found on
# PATH (a rustup proxy) finds no toolchain under the private HOME and cannot start. Each is
# the caller's value, else that folder of the caller's HOME (rustup's own default).
TOOLCHAIN_HOMES = (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo"))
# Prefixes of the private directories (the scratch port appends a random suffix).
INVOCATION_PREFIX = "runtime-"
OUTPUT_PREFIX = "output-"
TMP_PREFIX = "tmp-"
HOME_PREFIX = "home-"
CACHE_PREFIX = "cache-"
CHILD_PREFIXES = (OUTPUT_PREFIX, TMP_PREFIX, HOME_PREFIX, CACHE_PREFIX)


@dataclass(frozen=True)
class RuntimeDirs:
    """One invocation's private directories: ``root`` holds the four others."""

    root: str
    output: str
    tmp: str
    home: str
    cache: str


def runtime_environment(
    inherited: Mapping[str, str], workspace_dir: str, dirs: RuntimeDirs
) -> dict[str, str]:
    """The complete environment of a runtime command."""
    env = {name: inherited[name] for name in INHERITED_VARIABLES if inherited.get(name)}
    env.setdefault("LANG", DEFAULT_LANG)
    home = inherited.get("HOME")
    for name, folder in TOOLCHAIN_HOMES:
        value = inherited.get(name) or (f"{home.rstrip('/')}/{folder}" if home else None)
        if value:
            env[name] = value
    env.update(
        {
            "ARTIFACTIZE_WORKSPACE_DIR": workspace_dir,
            "ARTIFACTIZE_OUTPUT_DIR": dirs.output,
            "ARTIFACTIZE_TMP_DIR": dirs.tmp,
            "HOME": dirs.home,
            "XDG_CACHE_HOME": dirs.cache,
            "TMPDIR": dirs.tmp,
            "TMP": dirs.tmp,
            "TEMP": dirs.tmp,
        }
    )
    return env


def create_private_dirs(
    scratch: ScratchSpace, parent: str | None, created: list[str], prefix: str = INVOCATION_PREFIX
) -> RuntimeDirs:
    """A fresh private invocation directory below ``parent`` (None: the system's temporary
    folder) holding the output, tmp, home and cache directories.

    The root enters ``created`` as soon as it exists, so the caller can remove it with
    ``remove_private_dirs`` on every path, a failed creation of a child included. Raises
    ``OSError``."""
    root = scratch.create_private_directory(parent, prefix)
    created.append(root)
    children = []
    for child_prefix in CHILD_PREFIXES:
        children.append(scratch.create_private_directory(root, child_prefix))
        created.append(children[-1])  # removed before the root: an empty one, one rmdir
    output, tmp, home, cache = children
    return RuntimeDirs(root=root, output=output, tmp=tmp, home=home, cache=cache)


def remove_private_dirs(scratch: ScratchSpace, created: list[str]) -> None:
    """Remove what ``create_private_dirs`` created, the newest first (the children, which a
    command most often leaves empty, before the root: one ``rmdir`` each instead of a
    recursive walk of the root); a path leaves ``created`` once it is gone, so a retry
    after a failure (``OSError``) removes only what is left."""
    while created:
        scratch.remove_tree(created[-1])
        created.pop()


class InvocationPool:
    """Invocation directories a runtime command left as they were created, kept for the
    next runtime eval below the same parent (a Run's folder) instead of five ``rmdir`` and
    five ``mkdtemp``: the next command finds them exactly as a fresh set (the scratch port
    rechecks: private, not links, empty, nothing added). One pool per command; ``drain``
    removes what it keeps at the Run's end, and a killed Run's folder is swept by the next
    start. Used from the event loop and worker threads alike: it only pops from and appends
    to its lists, each one step that needs no lock (``dict.setdefault``, ``list.pop``)."""

    def __init__(self, scratch: ScratchSpace) -> None:
        self.scratch = scratch
        self._idle: dict[str, list[list[str]]] = {}  # parent -> ``created`` lists

    def take(self, parent: str, created: list[str]) -> RuntimeDirs:
        """A kept set below ``parent`` still as created, else a fresh one (``OSError``
        from creating it); ``created`` receives its paths, root first."""
        while True:
            try:
                kept: list[str] | None = self._idle.get(parent, []).pop()
            except IndexError:
                kept = None
            if kept is None:
                return create_private_dirs(self.scratch, parent, created)
            created.extend(kept)
            root, children = kept[0], kept[1:]
            if self.scratch.emptied(root, children):
                output, tmp, home, cache = children
                return RuntimeDirs(root=root, output=output, tmp=tmp, home=home, cache=cache)
            remove_private_dirs(self.scratch, created)  # changed since: never handed out

    def give_back(self, parent: str, created: list[str]) -> None:
        """Keep the set in ``created`` (emptied of it) when its command left it as created;
        else remove it (``OSError``, what is left stays in ``created``)."""
        if len(created) == 1 + len(CHILD_PREFIXES):
            root, children = created[0], created[1:]
            if self.scratch.emptied(root, children):
                self._idle.setdefault(parent, []).append(list(created))
                created.clear()
                return
        remove_private_dirs(self.scratch, created)

    def drain(self) -> None:
        """Remove every kept set (all are tried; the first ``OSError`` is raised after)."""
        kept = [c for sets in self._idle.values() for c in sets]
        self._idle.clear()
        failure: OSError | None = None
        for created in kept:
            try:
                remove_private_dirs(self.scratch, created)
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
