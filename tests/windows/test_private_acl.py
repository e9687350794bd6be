"""Owner-only DACLs, the Windows form of 0700/0600."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from artifactize.adapters.windows.private_acl import owner_only_sddl
from tests.contract.adapters import is_private, needs_real_acls

windows_only = pytest.mark.skipif(sys.platform != "win32", reason="Windows ACLs")


def test_the_dacl_is_protected_with_one_full_control_entry() -> None:
    assert owner_only_sddl("S-1-5-21-1-2-3-1001", folder=True) == (
        "D:P(A;OICI;FA;;;S-1-5-21-1-2-3-1001)"
    )
    assert owner_only_sddl("S-1-5-21-1-2-3-1001", folder=False) == (
        "D:P(A;;FA;;;S-1-5-21-1-2-3-1001)"
    )


@windows_only
def test_the_user_is_named_by_the_token_sid() -> None:
    from artifactize.adapters.windows.private_acl import user_sid

    assert re.fullmatch(r"S-1-5-21(-\d+)+", user_sid())


@windows_only
def test_restricting_a_file_and_a_folder_succeeds(tmp_path: Path) -> None:
    from artifactize.adapters.windows.private_acl import restrict_to_owner

    folder = tmp_path / "private"
    folder.mkdir()
    file = folder / "token"
    file.write_text("secret")
    restrict_to_owner(str(folder), folder=True)
    restrict_to_owner(str(file), folder=False)
    assert file.read_text() == "secret"  # the owner keeps full access


@windows_only
@needs_real_acls
def test_the_restriction_is_what_windows_reports_afterwards(tmp_path: Path) -> None:
    from artifactize.adapters.windows.private_acl import restrict_to_owner

    file = tmp_path / "token"
    file.write_text("secret")
    restrict_to_owner(str(file), folder=False)
    assert is_private(str(file))


@windows_only
def test_a_missing_path_is_an_os_error(tmp_path: Path) -> None:
    from artifactize.adapters.windows.private_acl import restrict_to_owner

    with pytest.raises(OSError):
        restrict_to_owner(str(tmp_path / "missing"), folder=False)
