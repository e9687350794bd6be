"""Option and argument values coerced without importing pydantic, where the answer is certain.

typer 0.29 coerces every parameter value (given or default) through a pydantic ``TypeAdapter``
built on first use. Importing pydantic and building the adapters is about a quarter of a
``config check``'s start, for options that are all plain ``str``, ``bool`` and ``int``.

``install()`` puts a lazy coercion in front of typer's: a ``str`` stays itself, a ``bool``
stays itself, and an ``int`` option given as plain decimal digits within its ``min``/``max``
becomes that ``int``. Every other value (bytes, a number out of range, ``1_000``, `` 7``,
anything not plain) and every other annotation go to typer's own coercion unchanged, so its
results and its error messages are exactly typer's (tests/unit/test_parameter_coercion.py
compares the two over a corpus of inputs).

This leans on typer's private coercion layer (``typer._coercion``, and the name
``typer.core.build_runtime_param``), deliberately: typer is pinned exactly (``==0.29.2`` in
pyproject.toml and the lock), and the tests above fail on an upgrade that changes either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import typer.core
from typer._coercion import RuntimeParam, TypeDescriptor
from typer._coercion import build_runtime_param as _typer_build_runtime_param

# Digits pydantic's lax int parsing certainly reads as ``int(text)``: no sign but a leading
# minus, no leading zero, no whitespace or underscores, ASCII only.
_PLAIN_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")


def _plain(descriptor: TypeDescriptor) -> bool:
    info = descriptor.parameter_info
    return descriptor.annotation in (str, bool, int) and info.parser is None and not info.clamp


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """A plain ``str``/``bool``/``int`` parameter; anything uncertain goes to typer."""

    descriptor: TypeDescriptor = field(compare=False, repr=False, kw_only=True)

    def _fallback(self, value: Any, param: Any, ctx: Any) -> Any:
        return _typer_build_runtime_param(self.descriptor)._coerce_value(
            value, param=param, ctx=ctx
        )

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        annotation = self.annotation
        if annotation is str and type(value) is str:
            return value
        if annotation is bool and type(value) is bool:
            return value
        if annotation is int:
            number = _plain_int(value)
            if number is not None and self._within_limits(number):
                return number
        return self._fallback(value, param, ctx)

    def _within_limits(self, number: int) -> bool:
        low, high = self.parameter_info.min, self.parameter_info.max
        return (low is None or number >= low) and (high is None or number <= high)


def _plain_int(value: Any) -> int | None:
    if type(value) is int:
        return value
    if type(value) is str and _PLAIN_INT.fullmatch(value):
        return int(value)
    return None


def build_runtime_param(descriptor: TypeDescriptor) -> RuntimeParam:
    if _plain(descriptor):
        return PlainRuntimeParam(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            descriptor=descriptor,
        )
    return _typer_build_runtime_param(descriptor)


def install() -> None:
    """Route typer's parameter coercion through ``build_runtime_param`` (idempotent)."""
    setattr(typer.core, "build_runtime_param", build_runtime_param)  # noqa: B010  # its own name there
