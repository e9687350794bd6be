"""The signal helpers, where commands written before they moved to ``entrypoints/signals.py``
import them from (the store server and the terminal reviewer use them too, and they may not
import the command line)."""

from __future__ import annotations

from artifactize.entrypoints.signals import until_signal, watch_interrupts

__all__ = ["until_signal", "watch_interrupts"]
