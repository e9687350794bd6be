"""The ownership of one OS handle (a POSIX descriptor, a Windows handle), released exactly
once: what the POSIX and the Windows filesystem adapters' handles share."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class OwnedHandle:
    """Owns one OS handle: released once by ``close()`` or on leaving a ``with`` block;
    ``_release`` is the platform's close."""

    _owned: int | None

    def _release(self, handle: int) -> None:
        raise NotImplementedError

    def _held(self, what: str) -> int:
        """The handle; ``ValueError`` naming ``what`` once it is closed."""
        if self._owned is None:
            raise ValueError(f"{what} is closed")
        return self._owned

    def close(self) -> None:
        """Release the handle; closing twice is harmless."""
        handle, self._owned = self._owned, None
        if handle is not None:
            self._release(handle)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
