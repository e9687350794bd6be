"""Editing the owner fields as JSON in ``$VISUAL``/``$EDITOR`` (default ``vi``; the
composition root names Notepad on Windows, ``container.FALLBACK_EDITOR``).

For a schema the form cannot show (nested objects, arrays, composition, ``$ref``), or on
``Ctrl-E`` from the form. The fields go to a private temporary file
``artifactize-fields-*.json`` holding a template; after the editor exits, a non-empty
JSON object is the result's fields. An empty file, a nonzero editor exit or an invalid
file submits nothing. The file is removed afterwards whatever happened.

The terminal is handed to the editor (the caller pauses the screen around ``run_editor``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from artifactize.domain.reviews.human.submission import VERDICT_IN_FIELDS, FieldsError, human_result
from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.fields_file import read_fields_file

EDITOR_VARIABLES = ("VISUAL", "EDITOR")
EDITOR_DEFAULT = "vi"
TEMP_PREFIX = "artifactize-fields-"
TEMP_SUFFIX = ".json"
EMPTY_EDIT = "The edited file was empty; nothing was submitted."
EDITOR_FAILED = "The editor exited with status {code}; nothing was submitted."
EDITOR_UNAVAILABLE = "Cannot start the editor {editor}: {reason}"
VERDICT_GIVEN = "Leave the verdict out of the fields; you chose it already."


class EditError(Exception):
    """Nothing is submitted; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def editor_command(
    environment: Mapping[str, str], fallback: str = EDITOR_DEFAULT, *, windows: bool = False
) -> list[str]:
    """``$VISUAL``, else ``$EDITOR`` (split into words), else ``fallback``. On Windows a
    backslash is a path separator, not an escape: ``C:\\Tools\\ed.exe -w`` keeps its
    backslashes, and double quotes group a path with spaces."""
    for name in EDITOR_VARIABLES:
        words = _words(environment.get(name) or "", windows=windows)
        if words:
            return words
    return [fallback]


def _words(value: str, *, windows: bool) -> list[str]:
    if not windows:
        return shlex.split(value)
    words = shlex.split(value, posix=False)
    return [w[1:-1] if len(w) >= 2 and w[0] == w[-1] == '"' else w for w in words]


def write_template(template: Mapping[str, Any]) -> Path:
    """A new private file holding ``template`` as indented JSON."""
    descriptor, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(template, handle, ensure_ascii=False, indent=2)
        handle.write("\n")
    return Path(name)


def run_editor(command: list[str], path: Path) -> None:
    """Run the editor on ``path`` in this terminal; raises EditError when it fails."""
    try:
        completed = subprocess.run([*command, str(path)], check=False)
    except OSError as exc:
        raise EditError(
            EDITOR_UNAVAILABLE.format(editor=shlex.join(command), reason=exc.strerror)
        ) from None
    if completed.returncode != 0:
        raise EditError(EDITOR_FAILED.format(code=completed.returncode))


def read_result(path: Path, verdict: str) -> dict[str, Any]:
    """The edited fields with the verdict: ``{"verdict": …, …}``; raises EditError."""
    try:
        data = read_fields_file(str(path))
    except CommandError as exc:
        raise EditError(str(exc)) from None
    if not data.strip():
        raise EditError(EMPTY_EDIT)
    try:
        return human_result(verdict, data)
    except FieldsError as exc:
        raise EditError(
            VERDICT_GIVEN if exc.message == VERDICT_IN_FIELDS else exc.message
        ) from None
