"""Run the marker tests against another packaging release than this environment's.

wheelwise.variants.markers builds on packaging's private marker grammar, so
pyproject.toml allows only the tested major. `make test` also runs the marker tests
with the newest packaging on the package registry, so that a release which breaks that
private API is seen before the pin is raised::

    python tests/newest_packaging.py                   # the newest packaging
    python tests/newest_packaging.py --packaging 26.3  # one release

A throw-away venv gets that packaging and nothing else; its site-packages come first
and this environment's after them, so the test tools are this environment's and only
packaging differs. The marker tests run in it with the source tree on PYTHONPATH. Exit
status 1, naming the packaging release, when they fail on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from other_pythons import uv_executable  # this folder is the script's sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
# Every test that calls wheelwise.variants.markers itself.
MARKER_TESTS = (
    "tests/test_markers.py",
    "tests/test_fuzz_inputs.py::test_variant_markers_parse_or_raise",
)
_PROBE = "import packaging; print(packaging.__version__); print(packaging.__file__)"


class PackagingRun:
    """A throw-away venv in *folder* whose packaging is *requirement*."""

    def __init__(self, folder: Path, requirement: str) -> None:
        self.folder = folder
        self.requirement = requirement
        self.python = folder / "bin" / "python"

    def create(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(self.folder)], check=True
        )
        uv = uv_executable()
        # --refresh-package: "newest" is the registry's answer now, not a cached page.
        install = [uv, "pip", "install", "--quiet", "--python", str(self.python)]
        subprocess.run([*install, "--refresh-package", "packaging", self.requirement], check=True)
        own = Path(
            subprocess.run(
                [str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        # A .pth line appends a folder to sys.path after the venv's own site-packages.
        tools = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
        (own / "wheelwise-test-tools.pth").write_text("".join(f"{p}\n" for p in tools))

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src")
        env.pop("PYTHONHOME", None)
        return env

    def packaging(self) -> tuple[str, str]:
        """The version and the folder of the packaging the tests import."""
        probe = subprocess.run(
            [str(self.python), "-c", _PROBE],
            check=True,
            capture_output=True,
            text=True,
            env=self.environ(),
            cwd=ROOT,
        )
        version, location = probe.stdout.split()
        return version, location

    def run_tests(self, tests: Sequence[str]) -> int:
        command = [str(self.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
        return subprocess.run(command, env=self.environ(), cwd=ROOT).returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--packaging",
        metavar="VERSION",
        default=os.environ.get("WHEELWISE_TEST_PACKAGING"),
        help="the packaging release to test with (default: the newest on the registry; "
        "also WHEELWISE_TEST_PACKAGING)",
    )
    parser.add_argument("tests", nargs="*", default=list(MARKER_TESTS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    requirement = f"packaging=={args.packaging}" if args.packaging else "packaging"
    with tempfile.TemporaryDirectory(prefix="wheelwise-packaging-") as scratch:
        run = PackagingRun(Path(scratch) / "venv", requirement)
        run.create()
        version, location = run.packaging()
        print(f"== marker tests against packaging {version} ({location})", flush=True)
        if run.run_tests(args.tests) != 0:
            print(
                f"FAILED: the marker tests fail on packaging {version} "
                "(wheelwise.variants.markers builds on its private marker grammar)",
                file=sys.stderr,
            )
            return 1
    print(f"== the marker tests pass on packaging {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
