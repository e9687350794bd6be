"""A ``verify``'s options, apart from the Run's context: the command parses and checks
them, and keys a replayed Run by them (``run.replay``), before any workspace is loaded."""

from __future__ import annotations

from dataclasses import dataclass

from artifactize.domain.reviews.human.wait_limits import WAIT_TIMEOUT_DEFAULT_MS, check_wait_timeout
from artifactize.domain.reviews.run.policy import DEFAULT_POLICY, RunPolicy


@dataclass(frozen=True)
class VerifyOptions:
    repo: str
    state_dir: str
    force: bool = False
    wait: bool = False  # poll until the Run's Human requests settle
    recursive: bool = False  # execute every eval of the required scope, not only the selected
    ignore_gates: bool = False  # run evals whose inputs are not GREEN yet (obligations stay)
    wait_timeout_ms: int = WAIT_TIMEOUT_DEFAULT_MS  # from when scheduling starts
    policy: RunPolicy = DEFAULT_POLICY  # --reuse-only, --jobs, --max-executions, --profile
    comment: str | None = None  # --comment: why the Run was started, as its starter says

    def __post_init__(self) -> None:
        check_wait_timeout(self.wait_timeout_ms)
        if self.comment is not None:
            check_comment(self.comment)


COMMENT_MAX_CHARS = 500


def check_comment(text: str) -> str:
    """``--comment``: one line of at most COMMENT_MAX_CHARS characters, not blank."""
    if not text.strip():
        raise ValueError("--comment must not be blank.")
    if len(text) > COMMENT_MAX_CHARS:
        raise ValueError(f"--comment is {len(text)} characters; at most {COMMENT_MAX_CHARS}.")
    if any(char in text for char in "\r\n"):
        raise ValueError("--comment must be one line.")
    return text
