"""The smoke run of bench/link_floor.py on a small tree: every folder and file
counted, each run timed, and nothing left beside the tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


def test_smoke_run_on_a_small_tree(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    (entry / "pkg" / "sub").mkdir(parents=True)
    (entry / "pkg-1.0.dist-info").mkdir()
    for path in ("pkg/__init__.py", "pkg/sub/a.py", "pkg/sub/b.so", "pkg-1.0.dist-info/RECORD"):
        (entry / path).write_text(path)
    report = run_bench("link_floor.py", str(entry), "--runs", "2", timeout=120)
    assert (report["folders"], report["files"], report["runs"]) == (3, 4, 2)
    assert len(report["runs_s"]) == len(report["links_from_open_folders_s"]) == 2
    assert all(seconds > 0 for seconds in report["median_s"].values())
    # The linked copies are gone; the tree is as it was.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry"]
    assert (entry / "pkg" / "sub" / "a.py").read_text() == "pkg/sub/a.py"


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="not a folder"):
        run_bench("link_floor.py", str(tmp_path / "nowhere"), timeout=60)
