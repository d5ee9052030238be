"""``wheelwise tree``: the same lines as ``uv pip tree`` (0.13.9) on the same venvs, for
each of its options, and the variant label of a variant build with the dependencies
its variant markers give it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import NormalizedName, canonicalize_name

from fuzzkit import bounded
from gpuhouse import HASWELL, demo_house, machine
from indexkit import demo_wheel, installer_env, uv_executable
from installkit import make_venv
from variantkit import wheelwise
from wheelwise.environment.dependency_tree import (
    CYCLE_NOTE,
    SEEN_NOTE,
    DependencyGraph,
    Edge,
    TreeOptions,
    draw_tree,
)
from wheelwise.environment.installed import InstalledDist

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

# name, version, requirements (extras and markers included)
PROJECTS = [
    ("top", "1.0", ["mid[x]>=1", "shared"]),
    ("mid", "1.0", ['leaf; extra == "x"', "shared>=0.5", 'winonly; sys_platform == "win32"']),
    ("leaf", "1.0", []),
    ("shared", "1.0", ["base"]),
    ("base", "1.0", []),
    ("other", "1.0", ["shared", "missing>=2"]),
    ("multi", "1.0", ["shared<5,>=0.5", "base==1.*; python_version>'3'"]),
    ("old", "1.0", ["base>=2"]),
    ("Odd_Name", "2.0b1", ["base"]),
    ("norm", "1.0", ["base<2.0a.0,>=0.5"]),
    ("selfish", "1.0", ["selfish", "base"]),
    ("urlreq", "1.0", ["base @ https://example.com/base-1.0-py3-none-any.whl"]),
    ("strict_pkg", "1.0", ['Not_There[b]<2,>=1.0; sys_platform == "linux"']),
]
CYCLE = [("cyc_a", "1.0", ["cyc-b"]), ("cyc_b", "1.0", ["cyc-a"])]


def venv_with(root: Path, projects: list[tuple[str, str, list[str]]]) -> Path:
    """A venv holding *projects* (installed by uv, without their dependencies)."""
    wheels = root / "wheels"
    wheels.mkdir(parents=True)
    for name, version, requires in projects:
        demo_wheel(wheels, f"{name}-{version}-py3-none-any.whl", requires_dist=requires)
    python = make_venv(root / "venv")
    argv = [uv_executable(), "pip", "install", "--no-config", "--no-cache", "--no-deps", "-q"]
    argv += ["--python", str(python), *sorted(str(p) for p in wheels.iterdir())]
    subprocess.run(argv, env=installer_env(root), check=True, capture_output=True, timeout=120)
    return python


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return venv_with(tmp_path_factory.mktemp("tree-plain"), PROJECTS)


@pytest.fixture(scope="module")
def cyclic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return venv_with(tmp_path_factory.mktemp("tree-cycle"), [*PROJECTS[:5], *CYCLE])


def both(python: Path, tmp_path: Path, *args: str) -> tuple[str, str]:
    ours = wheelwise(["tree", "--python", str(python), *args], tmp_path / "cache")
    assert ours.returncode == 0, ours.stderr
    uv = subprocess.run(
        [uv_executable(), "pip", "tree", "--no-config", "--python", str(python), *args],
        env=installer_env(tmp_path), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return ours.stdout, uv.stdout


OPTIONS = [
    [],
    ["--invert"],
    ["--show-version-specifiers"],
    ["--invert", "--show-version-specifiers"],
    ["--depth", "1"],
    ["--depth", "0"],
    ["--prune", "shared"],
    ["--package", "top"],
    ["--package", "top", "--package", "shared"],
    ["--invert", "--package", "base", "--package", "Odd_Name"],
    ["--no-dedupe"],
    ["--no-dedupe", "--invert", "--depth", "2"],
]


@pytest.mark.parametrize("args", OPTIONS, ids=" ".join)
def test_the_lines_uv_pip_tree_prints(plain: Path, tmp_path: Path, args: list[str]) -> None:
    ours, uv = both(plain, tmp_path, *args)
    assert ours == uv
    assert ours.strip()


def test_what_the_tree_shows(plain: Path, tmp_path: Path) -> None:
    """Markers are read for this interpreter, extras are not followed (leaf is a root,
    as in uv), a requirement whose range the installed version misses draws no edge,
    and a distribution drawn already is marked."""
    ours, _ = both(plain, tmp_path, "--show-version-specifiers")
    lines = ours.splitlines()
    assert "leaf v1.0" in lines
    assert "old v1.0" in lines
    assert "├── base v1.0 [required: ==1.*]" in lines
    assert "└── shared v1.0 [required: >=0.5, <5]" in lines
    assert "│   └── shared v1.0 [required: >=0.5] (*)" in lines
    assert "└── base v1.0 [required: >=0.5, <2.0a0]" in lines
    assert "└── base v1.0 [required: https://example.com/base-1.0-py3-none-any.whl]" in lines
    assert "└── selfish v1.0 [required: *] (*)" in lines
    assert lines[-1] == SEEN_NOTE
    assert not any("winonly" in line or "missing" in line for line in lines)


def test_strict_warns_of_what_is_missing(plain: Path, tmp_path: Path) -> None:
    done = wheelwise(["tree", "--python", str(plain), "--strict"], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    warnings = set(done.stderr.strip().splitlines())
    assert warnings == {
        "wheelwise: warning: The package `old` requires `base>=2`, but `1.0` is installed",
        "wheelwise: warning: The package `other` requires `missing>=2`, but it's not installed",
        "wheelwise: warning: The package `strict-pkg` requires "
        "`not-there[b]>=1.0,<2 ; sys_platform == 'linux'`, but it's not installed",
    }
    uv = subprocess.run(
        [uv_executable(), "pip", "tree", "--no-config", "--strict", "--python", str(plain)],
        env=installer_env(tmp_path), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    theirs = {line for line in uv.stderr.splitlines() if line.startswith("warning: ")}
    assert {line.removeprefix("wheelwise: ") for line in warnings} == theirs


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--show-version-specifiers"],
        ["--package", "cyc-a", "--no-dedupe"],
        ["--package", "cyc-b"],
    ],
    ids=str,
)
def test_a_cycle(cyclic: Path, tmp_path: Path, args: list[str]) -> None:
    ours, uv = both(cyclic, tmp_path, *args)
    assert ours == uv
    note = CYCLE_NOTE if "--no-dedupe" in args else SEEN_NOTE
    assert ours.splitlines()[-1] == note


def test_depth_is_at_most_255_as_in_uv(plain: Path, tmp_path: Path) -> None:
    done = wheelwise(["tree", "--python", str(plain), "--depth", "256"], tmp_path / "cache")
    assert done.returncode == 2
    assert "256 is not in the range 0<=x<=255" in done.stderr


@pytest.fixture(scope="module")
def gpu_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from indexkit import http_server
    from wheelwise.publish.static import build_site

    root = tmp_path_factory.mktemp("tree-gpu")
    demo_house(root / "wheels")
    build_site(root / "wheels", root / "site")
    with http_server(root / "site") as base:
        yield f"{base}/simple/"


@pytest.mark.parametrize(("requirement", "cudart"), [("gpukit", True), ("gpukit#x86_64_v3", False)])
def test_a_variant_build_and_its_variant_dependencies(
    gpu_index: str, tmp_path: Path, requirement: str, cudart: bool
) -> None:
    """The CUDA build requires cudart through a variant marker; the x86_64_v3 build
    does not: the tree reads the markers for the build that is installed."""
    python = make_venv(tmp_path / "venv")
    env = machine(cpu=HASWELL, driver="12.8", gpus="8.6")
    argv = ["install", "-q", "--python", str(python), "-i", gpu_index, requirement, "app"]
    assert wheelwise(argv, tmp_path / "cache", env).returncode == 0
    done = wheelwise(["tree", "--python", str(python)], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    label = "cu128" if cudart else "x86_64_v3"
    expected = ["app v1.0", f"└── gpukit v1.0 (variant {label})"]
    expected += ["    └── cudart v1.0"] if cudart else []
    assert done.stdout.splitlines() == expected


# -- any graph ---------------------------------------------------------------------

_NAMES = [canonicalize_name(n) for n in "abcdef"]


@bounded(300)
@given(
    st.sets(st.sampled_from(_NAMES), min_size=1),
    st.lists(st.tuples(st.sampled_from(_NAMES), st.sampled_from(_NAMES)), max_size=20),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=0, max_value=6),
)
def test_any_graph_is_drawn_whole_and_ends(
    names: set[NormalizedName],
    pairs: list[tuple[NormalizedName, NormalizedName]],
    invert: bool,
    dedupe: bool,
    depth: int,
) -> None:
    """Cycles, self-requirements and repeated edges included: the drawing ends, every
    distribution is drawn (from the top when nothing leads to it), and each line
    names an installed one."""
    dists = {n: InstalledDist(n, "1.0", None, None, Path("/nonexistent")) for n in names}
    edges = [Edge(a, b, "*") for a, b in pairs if a in names and b in names]
    graph = DependencyGraph(dists, edges)
    lines = draw_tree(graph, TreeOptions(depth=depth, invert=invert, dedupe=dedupe))
    drawn = [line for line in lines if line not in (SEEN_NOTE, CYCLE_NOTE)]
    shown = {line.lstrip("│├└─ ").split(" v1.0")[0] for line in drawn}
    assert shown == names if depth >= len(names) else shown <= names
    assert len(drawn) < 10_000
