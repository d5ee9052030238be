"""``wheelwise show``: pip show's fields of distributions installed into real virtual
environments by real installs, the same lines as pip's own ``pip show`` for the
same environment, the variant label of a variant build, and the names that are
not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import backend_wheel, project
from indexkit import demo_wheel
from installkit import WHEEL, make_venv, pip, simple_wheel, site_packages
from variantkit import system_file, wheelwise
from wheelfactory import make_wheel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

# Alpha's own spelling, a Home-page given only as a Project-URL, and requirements
# that do not apply here: a duplicate, a false marker and an extra's.
ALPHA_METADATA = b"""\
Metadata-Version: 2.1
Name: Alpha
Version: 1.0
Summary: The first letter
Author: Ada
Author-email: Ada <ada@example.org>
License: MIT
Classifier: Programming Language :: Python :: 3
Classifier: License :: OSI Approved :: MIT License
Project-URL: Source, https://example.org/alpha/src
Project-URL: Home-Page, https://example.org/alpha
Provides-Extra: docs
Requires-Dist: Beta>=1.0
Requires-Dist: Beta; python_version >= "3"
Requires-Dist: gamma; python_version < "3"
Requires-Dist: delta; extra == "docs"

A long description that is no field.
"""
# Metadata 2.4: pip shows License-Expression in place of License.
DELTA_METADATA = b"""\
Metadata-Version: 2.4
Name: delta
Version: 2.0
Summary: Fourth
Home-page: https://example.org/delta
Project-URL: Homepage, https://example.org/not-this-one
License-Expression: MIT OR Apache-2.0
"""


def _alpha(folder: Path) -> Path:
    """``Alpha`` with a module, a console script and a data file."""
    info = "alpha-1.0.dist-info"
    members = {
        f"{info}/METADATA": ALPHA_METADATA,
        f"{info}/WHEEL": WHEEL,
        f"{info}/entry_points.txt": b"[console_scripts]\nalpha-cli = alpha:main\n",
        "alpha/__init__.py": b"def main():\n    print('alpha')\n",
        "alpha-1.0.data/data/share/alpha/readme.txt": b"alpha\n",
    }
    return make_wheel(folder, "alpha-1.0-py3-none-any.whl", extra_members=members, record=True)


def _delta(folder: Path) -> Path:
    members = {"delta-2.0.dist-info/METADATA": DELTA_METADATA, "delta-2.0.dist-info/WHEEL": WHEEL}
    return make_wheel(folder, "delta-2.0-py3-none-any.whl", extra_members=members, record=True)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alpha, beta, delta, epsilon, the tinybuild backend, and ``gpuish``: a variant
    build whose dependencies are gated by variant markers, one that holds for it
    (beta) and one that does not (gamma, which is not there to install)."""
    folder = tmp_path_factory.mktemp("show") / "wheels"
    folder.mkdir()
    _alpha(folder)
    simple_wheel(folder, "beta", "1.0")
    _delta(folder)
    simple_wheel(folder, "epsilon", "3.0")
    backend_wheel(folder)
    demo_wheel(
        folder,
        "gpuish-1.0-py3-none-any-x86_64_v3.whl",
        "x86_64_v3",
        {"x86_64": {"level": ["v3"]}},
        requires_dist=[
            'beta; "x86_64 :: level :: v3" in variant_properties',
            'gamma; "nvidia" in variant_namespaces',
        ],
    )
    return folder


def _install(python: Path, wheels: Path, *args: str) -> None:
    system = system_file(wheels.parent, ["v3"])  # a machine the x86_64_v3 build fits
    argv = ["install", "--python", str(python), "--no-index", "-f", str(wheels)]
    result = wheelwise([*argv, "--system", str(system), *args], wheels.parent / "cache")
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def python(wheels: Path) -> Path:
    """A venv holding alpha (and beta, its requirement), delta and gpuish; only read."""
    python = make_venv(wheels.parent / "venv")
    _install(python, wheels, "alpha", "delta", "gpuish")
    return python


def _show(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return wheelwise(["show", "--python", str(python), *args], python.parent / "cache")


def test_fields_in_pips_order(python: Path) -> None:
    site = site_packages(python)
    shown = _show(python, "alpha", "beta", "delta")
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout.splitlines() == [
        "Name: Alpha",
        "Version: 1.0",
        "Summary: The first letter",
        "Home-page: https://example.org/alpha",
        "Author: Ada",
        "Author-email: Ada <ada@example.org>",
        "License: MIT",
        f"Location: {site}",
        "Requires: Beta",
        "Required-by: ",
        "---",
        "Name: beta",
        "Version: 1.0",
        "Summary: ",
        "Home-page: ",
        "Author: ",
        "Author-email: ",
        "License: ",
        f"Location: {site}",
        "Requires: ",
        "Required-by: Alpha, gpuish",
        "---",
        "Name: delta",
        "Version: 2.0",
        "Summary: Fourth",
        "Home-page: https://example.org/delta",
        "Author: ",
        "Author-email: ",
        "License-Expression: MIT OR Apache-2.0",
        f"Location: {site}",
        "Requires: ",
        "Required-by: ",  # Alpha requires delta for its extra only
    ]


def test_a_variant_build_has_its_label_and_its_variant_markers_read(python: Path) -> None:
    shown = _show(python, "gpuish")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:3] == ["Name: gpuish", "Version: 1.0", "Variant: x86_64_v3"]
    assert "Requires: beta" in lines  # its property holds; nvidia's namespace does not
    plain = _show(python, "beta").stdout.splitlines()
    assert plain[:2] == ["Name: beta", "Version: 1.0"]
    assert not [line for line in plain if line.startswith("Variant:")]


def test_files_are_listed_relative_to_location(python: Path) -> None:
    shown = _show(python, "--files", "alpha")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    files = lines[lines.index("Files:") + 1 :]
    assert lines.index("Files:") == lines.index("Required-by: ") + 1
    assert files == sorted(files)
    assert all(line.startswith("  ") for line in files)
    paths = [line[2:] for line in files]
    assert {
        "alpha/__init__.py",
        "alpha-1.0.dist-info/METADATA",
        "alpha-1.0.dist-info/RECORD",
        "../../../bin/alpha-cli",
        "../../../share/alpha/readme.txt",
    } <= set(paths)
    site = site_packages(python)
    assert all((site / path).exists() for path in paths), paths


def test_a_missing_name_among_found_ones_is_a_warning(python: Path) -> None:
    shown = _show(python, "ALPHA", "not-there", "alpha")
    assert shown.returncode == 0
    assert shown.stderr == (
        f"wheelwise: warning: not-there is not installed in {python.parent.parent}\n"
    )
    lines = shown.stdout.splitlines()
    assert lines[0] == "Name: Alpha"
    assert "---" not in lines  # the same distribution, shown once


def test_only_missing_names_exit_1(python: Path) -> None:
    shown = _show(python, "not-there", "epsilon")  # epsilon is a wheel never installed
    assert shown.returncode == 1
    assert shown.stdout == ""
    assert shown.stderr.splitlines() == [
        f"wheelwise: warning: {name} is not installed in {python.parent.parent}"
        for name in ("not-there", "epsilon")
    ]


def test_no_name_is_an_error(python: Path) -> None:
    shown = _show(python)
    assert shown.returncode == 2
    assert shown.stderr == "wheelwise: error: nothing to show: give NAME...\n"


def test_a_target_folder_is_shown_with_target(python: Path, wheels: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    _install(python, wheels, "--target", str(folder), "epsilon")
    shown = _show(python, "--target", str(folder), "epsilon")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["Name: epsilon", "Version: 3.0"]
    assert f"Location: {folder}" in lines
    assert _show(python, "epsilon").returncode == 1  # not in the environment itself


@pytest.mark.slow
def test_the_same_lines_as_pip_show(wheels: Path, tmp_path: Path) -> None:
    """pip's own pip show for the same venv, files and an editable project too (no
    variant build there: pip cannot read variant markers)."""
    python = make_venv(tmp_path / "venv")
    tree = project(tmp_path / "editme", "editme", "1.0", dependencies=["delta"])
    _install(python, wheels, "alpha", "-e", str(tree))
    names = ["alpha", "beta", "delta", "editme"]
    ours = _show(python, "--files", *names)
    assert ours.returncode == 0, ours.stderr
    assert f"Editable project location: {tree}" in ours.stdout.splitlines()
    theirs = pip(python, "show", "--files", *names)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.stdout == theirs.stdout
    ours = _show(python, "--verbose", "--files", *names)
    assert ours.returncode == 0, ours.stderr
    assert "  alpha-cli = alpha:main" in ours.stdout.splitlines()
    assert "Installer: wheelwise" in ours.stdout.splitlines()
    assert ours.stdout == pip(python, "show", "--verbose", "--files", *names).stdout


def test_a_broken_record_is_a_warning_and_the_others_are_shown(
    wheels: Path, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    _install(python, wheels, "alpha")
    record = next(site_packages(python).glob("beta-*.dist-info")) / "RECORD"
    record.write_bytes(b"\xff\xfe not utf-8\n")
    shown = _show(python, "-f", "beta", "alpha")
    assert shown.returncode == 0
    assert "wheelwise: warning: beta: its files cannot be listed:" in shown.stderr
    assert "is not valid UTF-8" in shown.stderr
    lines = shown.stdout.splitlines()
    assert "Name: Alpha" in lines
    assert "  alpha/__init__.py" in lines
