"""The lane's interpreter is Windows CPython, with the dependencies our adapters load."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows only")


def test_the_interpreter_is_windows_cpython() -> None:
    assert sys.platform == "win32"
    assert sys.implementation.name == "cpython"


def test_rust_built_wheels_load() -> None:
    """rpds (jsonschema) and ry need ProcessPrng: the lane's stand-in DLL supplies it."""
    import jsonschema
    import ry

    assert jsonschema.Draft202012Validator({"type": "string"}).is_valid("x")
    assert ry is not None


def test_sqlalchemy_imports() -> None:
    """SQLAlchemy calls platform.system() at import; the lane moved _wmi.pyd aside."""
    import sqlalchemy

    assert sqlalchemy.__version__
