"""``CollectorPause`` over CPython's ``gc`` module."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# ``freeze_collector`` blocks open now, each holding a freeze it gives back at its end.
# ``pause_keeping`` asks this, not ``gc.get_freeze_count()``, which walks every frozen
# object: ~30 ms per question over the millions a 10,000-Artifact Run holds, asked at the end
# of each of its phases.
_freezes_held = 0


@contextmanager
def pause_collector() -> Iterator[None]:
    """Pause the cyclic garbage collector for the length of the block.

    Loading declarations allocates hundreds of thousands of containers that all stay alive
    (parsed tables, the typed model) and makes next to no reference cycles, so the
    collector would traverse the growing heap again and again for nothing: about a sixth
    of the load at 10,000 Artifacts. Reference counting still frees every temporary at
    once; the rare cycle (an exception and its traceback) waits for the collector's next
    pass. A collector that the caller already disabled stays disabled.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def pause_collector_to_exit() -> Iterator[None]:
    """``pause_collector`` for a short command whose objects all stay alive until it exits
    (``status``: the loaded workspace, its keys, its report): at the end of the block what
    is alive is moved out of the collector's passes (``gc.freeze``) before it runs again.
    Re-enabled over a heap allocated while paused, the collector's next passes would
    traverse all of it at once, for nothing (0.2-0.4 s at 10,000 Artifacts). A collector
    that the caller already disabled stays disabled, and nothing is frozen then."""
    with pause_collector_until_decided() as decided:
        decided()  # known from the start: the command ends with what it makes
        yield


@contextmanager
def pause_collector_until_decided() -> Iterator[Callable[[], None]]:
    """``pause_collector`` for work that may end the command (a replayed Run): the block is
    given a function to call once it knows it will, and the pause then ends as
    ``pause_collector_to_exit``'s (what is alive frozen: re-enabled over a heap allocated
    while paused, SQLAlchemy's modules among it, the collector's next pass traversed it
    all, 0.3-0.4 s after a replay at 10,000 Artifacts). A block that does not call it ends
    as a plain pause, nothing frozen: the work that follows (the whole ``verify``) has its
    own freezes, and objects frozen before them took its collector passes from 0.7 to 10 s.
    A collector that the caller already disabled stays disabled, and nothing is frozen."""
    enabled = gc.isenabled()
    decided: list[bool] = []
    with pause_collector():
        try:
            yield lambda: decided.append(True)
        finally:
            if enabled and decided:
                gc.freeze()  # before the pause ends, so that no pass comes first


@contextmanager
def pause_keeping() -> Iterator[None]:
    """``pause_collector``; and when the block ends inside a ``freeze_collector`` block,
    what it allocated joins the frozen objects (``gc.freeze`` again), to go back with them
    when that block ends.

    For work whose objects live as long as the frozen ones: a Run's documents, kept until
    the Run ends. A pause alone only defers their traversal: the first passes after it
    take every object allocated inside as new (at 10,000 Artifacts 0.36 s of gen-0 and
    gen-1 passes right after a Run's reuse phase, then a gen-2 pass of 0.25 s). Outside a
    frozen block it is a pause, nothing more (nothing would give the objects back).
    """
    with pause_collector():
        yield
        if _freezes_held:
            gc.freeze()


@contextmanager
def freeze_collector() -> Iterator[None]:
    """Keep what exists now out of the cyclic collector's passes for the length of the block
    (``gc.freeze``); it still collects everything allocated inside, and what was frozen goes
    back to the oldest generation at the end (``gc.unfreeze``).

    A Run allocates a few objects per request next to a loaded workspace of millions that all
    stay alive: every gen-2 pass traversed that workspace again (2.6 of 14.5 s of an
    all-reused ``verify`` at 10,000 Artifacts). Unlike a pause, the collector keeps running
    for a Run's own cycles, however long it lasts. When something else froze objects
    already, nothing is done (this would unfreeze them too).
    """
    global _freezes_held
    if gc.get_freeze_count():  # asked once, before the load: few objects to count yet
        yield
        return
    gc.freeze()
    _freezes_held += 1
    try:
        yield
    finally:
        _freezes_held -= 1
        gc.unfreeze()
