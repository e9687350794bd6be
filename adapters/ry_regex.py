"""Regex adapter: the Rust ``regex`` crate (1.13) through the ``ry`` binding.

``ry`` is the one binding found that takes a compile ``size_limit`` (reference/ecosystem.md §1).
It is a 17 MB extension module, so it is imported on the first compile, not at import time:
the CLI starts without it. The first import must not happen on a thread that later exits:
once the importing thread is gone, the next crate error raised on any other thread crashes
the interpreter (a segfault, observed with ry 0.0.105). Built-ins compile on short-lived
worker threads, so a first compile off the main thread imports ``ry`` on a parked daemon
thread that lives as long as the process.

Case-insensitive matching uses the crate's builder flag (``RegexBuilder::case_insensitive``),
which is the same Unicode-aware simple case folding as an inline ``(?i)`` prefix but leaves the
pattern, and therefore the positions in the crate's error messages, untouched.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from artifactize.ports.regex import CompiledRegex, RegexError

if TYPE_CHECKING:
    import ry

# ry wraps every crate error as ValueError("Invalid regex: <the crate's message>").
_RY_ERROR_PREFIX = "Invalid regex: "


_import_lock = threading.Lock()
_module: ModuleType | None = None  # set once the import has completed


def _ry() -> ModuleType:
    """The ``ry`` module, imported on a thread that never exits (see the module docstring).

    ``sys.modules`` is not consulted: it holds the module while it is still initializing.
    """
    global _module
    if _module is None:
        with _import_lock:
            if _module is None:
                if threading.current_thread() is threading.main_thread():
                    _module = importlib.import_module("ry")
                else:
                    _module = _import_on_parked_thread()
    return _module


def _import_on_parked_thread() -> ModuleType:
    imported = threading.Event()
    result: list[ModuleType] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(importlib.import_module("ry"))
        except BaseException as error:  # re-raised on the calling thread
            failure.append(error)
            imported.set()
            return
        imported.set()
        threading.Event().wait()  # parked for the life of the process

    threading.Thread(target=run, name="ry-import", daemon=True).start()
    imported.wait()
    if failure:
        raise failure[0]
    return result[0]


def _engine_message(error: Exception) -> str:
    message = str(error)
    return message.removeprefix(_RY_ERROR_PREFIX)


class RyCompiledRegex:
    """A compiled pattern; matching is linear in the haystack (no backtracking)."""

    def __init__(self, regex: ry.Regex) -> None:
        self._regex = regex

    def is_match(self, text: str) -> bool:
        # The crate takes UTF-8: text with lone surrogates raises UnicodeEncodeError.
        return self._regex.is_match(text)

    def find_start(self, text: str) -> int | None:
        # ry 0.0.105 answers (start, end) in UTF-8 bytes, though its stub says ``str``;
        # tests/integration/test_ry_regex.py pins it, and anything else is refused here.
        found: object = self._regex.find(text)
        if found is None:
            return None
        if not isinstance(found, tuple):
            raise TypeError(f"ry's Regex.find answered {type(found).__name__}, not offsets")
        start: int = found[0]
        if text.isascii():  # one byte per code point (a flag CPython keeps on the str)
            return start
        return len(text.encode("utf-8")[:start].decode("utf-8"))


class RyRegexEngine:
    """``RegexEngine`` backed by the Rust crate; errors carry the crate's own text.

    Constructing the engine imports ``ry`` on the constructing thread (the composition root
    runs on the main thread), so no short-lived worker is ever the importing thread.
    """

    def __init__(self) -> None:
        _ry()

    def compile(self, pattern: str, *, case_insensitive: bool, size_limit: int) -> CompiledRegex:
        if size_limit < 0:
            raise ValueError(f"size_limit must not be negative, got {size_limit}")
        ry = _ry()  # lazy: a 17 MB module the CLI should not load unless a regex is needed
        try:
            regex = ry.Regex(pattern, case_insensitive=case_insensitive, size_limit=size_limit)
        except UnicodeEncodeError as error:
            # A pattern with lone surrogates (possible from JSON input) is not a Rust string.
            raise RegexError(f"pattern is not valid Unicode: {error.reason}") from error
        except ValueError as error:
            raise RegexError(_engine_message(error)) from error
        return RyCompiledRegex(regex)
