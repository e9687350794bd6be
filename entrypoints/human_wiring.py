"""How Human review commands are wired: reviewer, state, lifecycle service and team store.

``request …`` and the terminal reviewer (``review``) act on the same requests with the same
rules, so they build those pieces here, once: the reviewer from ``--reviewer`` or
``$USER``, the existing state (an action never creates one), ``HumanReviews`` over the
container's adapters, and the configured remote review store (``None`` when there is none).
"""

from __future__ import annotations

import os

from domain.reviews.human.errors import REQUEST_NOT_FOUND
from domain.reviews.human.lifecycle import HumanReviewPorts, HumanReviews
from domain.reviews.human.reviewers import ReviewerError, default_reviewer
from entrypoints.cli.context import CliContext
from entrypoints.cli.runs import ReviewCommandError, open_state, producer, state_dir
from ports.review_store import RemoteConfigError, RemoteStore
from ports.state import StateStore


def reviewer_name(given: str | None) -> str:
    """``--reviewer``, else ``$USER`` (``$USERNAME``); checked by the lifecycle as well."""
    if given is not None:
        return given
    try:
        return default_reviewer(os.environ)
    except ReviewerError as exc:
        raise ReviewCommandError(exc.message) from None


def existing_state() -> StateStore:
    """The existing state; actions never create one (no state: no request to act on)."""
    store = open_state(create=False)
    if store is None:
        raise ReviewCommandError(REQUEST_NOT_FOUND)
    return store


def human_reviews(store: StateStore) -> HumanReviews:
    """The Human review lifecycle over ``store`` and the container's adapters."""
    container = CliContext.container
    return HumanReviews(
        HumanReviewPorts(
            state=store,
            load=container.config_service().load,
            tools=container.human_tool_ports(),
            filesystem=container.filesystem(),
            clock=container.clock(),
            producer=producer(),
            scripts=container.fingerprint_scripts(),
        )
    )


def remote_store() -> RemoteStore | None:
    """The configured team review store, or None. An invalid configuration is an error
    here, before anything settles, so a submission is never saved without its publish."""
    stores = CliContext.container.remote_stores()
    try:
        settings = stores.settings(state_dir())
    except RemoteConfigError as exc:
        raise ReviewCommandError(str(exc)) from None
    return stores.open(settings) if settings is not None else None
