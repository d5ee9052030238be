"""A ``.dist-info`` folder whose ``METADATA`` does not name a distribution (missing,
without a Version): ``list``, ``freeze``, ``tree`` and ``check`` leave it out with a
warning naming the folder, where they used to drop it silently (``pip list`` shows it
with version ``None``; ``uv pip tree`` stops)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from installkit import make_venv, site_packages
from variantkit import wheelwise

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["list"], "good"),
        (["freeze"], "good==1.0"),
        (["list", "--format", "freeze"], "good==1.0"),
        (["tree"], "good v1.0"),
        (["check"], "no broken requirements found"),
    ],
)
def test_an_unreadable_dist_info_is_told_not_dropped(
    tmp_path: Path, command: list[str], shown: str
) -> None:
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    good = site / "good-1.0.dist-info"
    good.mkdir()
    (good / "METADATA").write_text("Metadata-Version: 2.1\nName: good\nVersion: 1.0\n\n")
    no_version = site / "broken-1.0.dist-info"
    no_version.mkdir()
    (no_version / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\n\n")
    no_metadata = site / "nometa-1.0.dist-info"
    no_metadata.mkdir()
    done = wheelwise([*command, "--python", str(python)], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout
    assert "broken-1.0" not in done.stdout
    assert "broken==" not in done.stdout
    warnings = done.stderr.strip().splitlines()
    assert warnings == [
        f"wheelwise: warning: {folder}: left out: its METADATA is missing, unreadable or "
        "gives no Name and Version; remove the folder, then install that project again"
        for folder in (no_version, no_metadata)
    ]
