"""``wheelwise build``: PEP 517 builds of variant wheels, offline.

The example projects use the setuptools, hatchling and flit-core backends (all
installed in the test environment, for --no-isolation builds). Isolated builds
install their build requirements from the local wheelhouse that `make test`
downloads into .venv/wheelhouse, never from the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile

from clikit import invoke
from wheelwise.variants.errors import VariantError
from wheelwise.variants.labels import hash_label
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.build import build_variant_wheel, load_project_variant
from wheelwise.wheels.errors import BuildError, WheelError

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"

VARIANT_TABLE = """
[variant.default-priorities]
namespace = ["x86_64", "blas_lapack"]
feature.x86_64 = ["level"]

[variant.providers.x86_64]
requires = ["provider-variant-x86-64 >=0.0.1"]
enable-if = "platform_machine == 'x86_64' or platform_machine == 'AMD64'"
plugin-api = "provider_variant_x86_64.plugin:X8664Plugin"

[variant.providers.blas_lapack]
requires = ["blas-lapack-variant-provider"]
install-time = false
"""


@dataclass(frozen=True)
class Example:
    backend: str
    # The import name of the module; the project name is the same with '-'.
    module: str
    build_system: str
    project_extra: str
    # Path of the module, relative to the project root.
    module_path: str
    with_variant_table: bool


EXAMPLES = {
    "setuptools": Example(
        backend="setuptools",
        module="demo_st",
        build_system='requires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"',
        project_extra='[tool.setuptools]\npy-modules = ["demo_st"]',
        module_path="demo_st.py",
        with_variant_table=True,
    ),
    "hatchling": Example(
        backend="hatchling",
        module="demo_hatch",
        build_system='requires = ["hatchling>=1.25"]\nbuild-backend = "hatchling.build"',
        project_extra="",
        module_path="demo_hatch/__init__.py",
        with_variant_table=False,
    ),
    "flit": Example(
        backend="flit",
        module="demo_flit",
        build_system='requires = ["flit_core>=3.9"]\nbuild-backend = "flit_core.buildapi"',
        project_extra="",
        module_path="demo_flit/__init__.py",
        with_variant_table=True,
    ),
}


def write_project(root: Path, example: Example, *, build_system: str | None = None) -> Path:
    """A minimal project for *example*'s backend in *root*."""
    root.mkdir(parents=True, exist_ok=True)
    name = example.module.replace("_", "-")
    pyproject = textwrap.dedent(
        f"""\
        [build-system]
        {{build_system}}

        [project]
        name = "{name}"
        version = "1.0"
        description = "An example project for wheelwise build"
        requires-python = ">=3.10"
        """
    ).format(build_system=build_system or example.build_system)
    if example.project_extra:
        pyproject += "\n" + example.project_extra + "\n"
    if example.with_variant_table:
        pyproject += VARIANT_TABLE
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    module = root / example.module_path
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(
        f'"""The {example.backend} example."""\n\nBACKEND = "{example.backend}"\n',
        encoding="utf-8",
    )
    return root


def assert_input_error(result: Result, *needles: str) -> str:
    """Exit 2, one line on stderr, nothing on stdout; returns the message."""
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wheelwise: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def install_and_import(wheel: Path, module: str, scratch: Path) -> str:
    """Install *wheel* with installer into a scheme under *scratch*; import *module*."""
    root = scratch / "installed"
    scheme = {key: str(root / key) for key in ("purelib", "platlib", "headers", "scripts", "data")}
    destination = SchemeDictionaryDestination(
        scheme, interpreter=sys.executable, script_kind="posix"
    )
    with WheelFile.open(wheel) as source:
        source.validate_record()
        install(source, destination, {"INSTALLER": b"wheelwise-tests"})
    env = {**os.environ, "PYTHONPATH": scheme["purelib"]}
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}; print({module}.__file__, {module}.BACKEND)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=scratch,
        env=env,
    )
    where, backend = proc.stdout.split()
    assert Path(where).is_relative_to(root)
    return backend


def check_variant_wheel(
    wheel: Path,
    *,
    label: str,
    properties: list[str],
    namespaces: list[str],
    example: Example,
    scratch: Path,
) -> None:
    """The variant wheel as built: name, variant data, RECORD, installs and imports."""
    assert wheel.is_file()
    assert wheel.name.startswith(f"{example.module}-1.0-")
    assert wheel.name.endswith(f"-{label}.whl")
    shown = invoke("variant", "show", wheel, "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == {
        "filename": wheel.name,
        "label": label,
        "properties": sorted(properties),
        "namespaces": namespaces,
    }
    with WheelArchive(wheel) as archive:
        archive.verify_record()
        document = json.loads(archive.read(archive.dist_info_path("variant.json")))
    assert document["default-priorities"]["namespace"] == namespaces
    assert list(document["variants"]) == [label]
    assert install_and_import(wheel, example.module, scratch) == example.backend


# -- --no-isolation builds: one per backend -------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "args", "label", "properties"),
    [
        pytest.param(
            "setuptools",
            ["-p", "x86_64 :: level :: v3", "-p", "blas_lapack :: provider :: openblas"],
            "x8664v3_openblas",
            ["x86_64 :: level :: v3", "blas_lapack :: provider :: openblas"],
            id="setuptools-label",
        ),
        pytest.param(
            "hatchling",
            ["-p", "x86_64 :: level :: v2"],
            None,
            ["x86_64 :: level :: v2"],
            id="hatchling-hash-label",
        ),
        pytest.param("flit", ["--null"], "null", [], id="flit-null"),
    ],
)
def test_no_isolation_build(
    tmp_path: Path, backend: str, args: list[str], label: str | None, properties: list[str]
) -> None:
    example = EXAMPLES[backend]
    src = write_project(tmp_path / "src", example)
    out = tmp_path / "out"
    if label is not None and label != "null":
        args = [*args, "--label", label]
    result = invoke("build", src, *args, "-o", out, "--no-isolation")
    assert result.exit_code == 0, (result.output, result.exception)
    if label is None:
        label = hash_label(VariantProperty.parse(p) for p in properties)
    wheel = Path(result.stdout.strip())
    assert wheel.parent == out
    # Only the variant wheel lands in the output directory: no plain wheel, no staging.
    assert sorted(out.iterdir()) == [wheel]
    namespaces = (
        ["x86_64", "blas_lapack"]
        if example.with_variant_table
        else sorted({VariantProperty.parse(p).namespace for p in properties})
    )
    check_variant_wheel(
        wheel,
        label=label,
        properties=properties,
        namespaces=namespaces,
        example=example,
        scratch=tmp_path,
    )


@pytest.mark.slow
def test_library_api(tmp_path: Path) -> None:
    example = EXAMPLES["setuptools"]
    src = write_project(tmp_path / "src", example)
    lines: list[str] = []
    wheel = build_variant_wheel(
        src,
        tmp_path / "out",
        properties=[VariantProperty.parse("blas_lapack :: provider :: mkl")],
        label="mkl",
        isolation=False,
        output=lines.append,
    )
    assert wheel == tmp_path / "out" / "demo_st-1.0-py3-none-any-mkl.whl"
    assert lines, "the backend's output goes to the output callback"
    project = load_project_variant(src)
    assert project is not None
    assert project.namespaces == ("x86_64", "blas_lapack")
    assert "x86_64" in project.providers


@pytest.mark.slow
def test_default_outdir_is_src_dist_and_rebuild_replaces(tmp_path: Path) -> None:
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    args: list[str | Path] = [
        "build",
        src,
        "-p",
        "x86_64 :: level :: v1",
        "--label",
        "v1",
        "--no-isolation",
    ]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    wheel = src / "dist" / "demo_st-1.0-py3-none-any-v1.whl"
    assert first.stdout.strip() == str(wheel)
    assert first.stderr == ""
    before = wheel.stat().st_ino
    second = invoke(*args, "-v")
    assert second.exit_code == 0, second.output
    assert second.stdout.strip() == str(wheel)
    assert second.stderr.strip(), "-v shows the backend's output on stderr"
    assert sorted((src / "dist").iterdir()) == [wheel]
    assert wheel.stat().st_ino != before


# -- isolated builds, from the local wheelhouse ------------------------------------


@pytest.fixture
def offline_pip(monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip in the isolated build environment installs only from .venv/wheelhouse."""
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.fail(
            f"no local wheelhouse at {WHEELHOUSE}: run `make test` (its setup downloads "
            "the build backends there) before running the isolated build tests"
        )
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(WHEELHOUSE))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    return WHEELHOUSE


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("backend", ["setuptools", "hatchling"])
def test_isolated_build(tmp_path: Path, backend: str) -> None:
    example = EXAMPLES[backend]
    src = write_project(tmp_path / "src", example)
    out = tmp_path / "out"
    props = ["x86_64 :: level :: v3"]
    result = invoke("build", src, "-p", props[0], "--label", "v3", "-o", out)
    assert result.exit_code == 0, (result.output, result.exception)
    wheel = Path(result.stdout.strip())
    assert sorted(out.iterdir()) == [wheel]
    namespaces = ["x86_64", "blas_lapack"] if example.with_variant_table else ["x86_64"]
    check_variant_wheel(
        wheel,
        label="v3",
        properties=props,
        namespaces=namespaces,
        example=example,
        scratch=tmp_path,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_isolated_build_requirements_not_installable(tmp_path: Path) -> None:
    src = write_project(
        tmp_path / "src",
        EXAMPLES["setuptools"],
        build_system=(
            'requires = ["setuptools>=70", "no-such-package-wheelwise-test"]\n'
            'build-backend = "setuptools.build_meta"'
        ),
    )
    out = tmp_path / "out"
    message = assert_input_error(
        invoke("build", src, "-p", "x86_64 :: level :: v3", "-o", out),
        "could not install the build requirements",
        "no-such-package-wheelwise-test",
    )
    assert "output ended with:" in message
    assert not out.exists()


# -- errors -------------------------------------------------------------------------


def test_error_missing_pyproject(tmp_path: Path) -> None:
    assert_input_error(
        invoke("build", tmp_path, "-p", "x86_64 :: level :: v3", "--no-isolation"),
        "no pyproject.toml",
    )
    assert_input_error(
        invoke("build", tmp_path / "missing", "-p", "x86_64 :: level :: v3"), "no such directory"
    )


def test_error_setup_py_syntax_error(tmp_path: Path) -> None:
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    (src / "setup.py").write_text("from setuptools import setup\nsetup(\n", encoding="utf-8")
    out = tmp_path / "out"
    message = assert_input_error(
        invoke("build", src, "-p", "x86_64 :: level :: v3", "-o", out, "--no-isolation"),
        "build backend 'setuptools.build_meta' failed",
        "output ended with:",
        "SyntaxError",
    )
    assert "Traceback" not in message.split("output ended with:")[0]
    assert not out.exists()


def test_error_bad_backend_name(tmp_path: Path) -> None:
    src = write_project(
        tmp_path / "src",
        EXAMPLES["setuptools"],
        build_system='requires = []\nbuild-backend = "no_such_backend.api"',
    )
    assert_input_error(
        invoke(
            "build", src, "-p", "x86_64 :: level :: v3", "-o", tmp_path / "out", "--no-isolation"
        ),
        "build backend 'no_such_backend.api' is not available",
        "No module named 'no_such_backend'",
    )


@pytest.mark.slow
def test_error_build_requirements_missing_without_isolation(tmp_path: Path) -> None:
    src = write_project(
        tmp_path / "src",
        EXAMPLES["setuptools"],
        build_system=(
            'requires = ["setuptools", "no-such-package-wheelwise-test"]\n'
            'build-backend = "setuptools.build_meta"'
        ),
    )
    assert_input_error(
        invoke("build", src, "-p", "x86_64 :: level :: v3", "--no-isolation"),
        "build requirements missing",
        "no-such-package-wheelwise-test",
    )


def test_error_no_properties(tmp_path: Path) -> None:
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    assert_input_error(invoke("build", src), "needs properties", "--null", "python -m build")
    with pytest.raises(BuildError, match="python -m build"):
        build_variant_wheel(src, tmp_path / "out", isolation=False)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-p", "x86_64 :: level"], "x86_64 :: level"),
        (["-p", "x86_64 :: Level! :: v3"], "Level!"),
        (["-p", "cuda :: version :: 12"], "cuda used by the properties are not listed"),
        (["-p", "x86_64 :: level :: v9"], "unknown value in 'x86_64 :: level :: v9'"),
        (["-p", "x86_64 :: colour :: v3"], "has no feature 'colour'"),
        (["-p", "x86_64 :: level :: v3", "--label", "Bad-Label"], "invalid variant label"),
        (["--null", "--label", "x"], "--label and --null"),
        (["--null", "-p", "x86_64 :: level :: v3"], "--null"),
    ],
)
def test_error_invalid_request(tmp_path: Path, args: list[str], needle: str) -> None:
    """Refused before the backend runs (a real build can take minutes)."""
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    result = invoke("build", src, *args, "-o", tmp_path / "out", "--no-isolation")
    assert_input_error(result, needle)
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in src.iterdir()) == ["demo_st.py", "pyproject.toml"]


def test_library_refuses_before_building(tmp_path: Path) -> None:
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    with pytest.raises(VariantError, match="not listed"):
        build_variant_wheel(
            src,
            tmp_path / "out",
            properties=[VariantProperty.parse("cuda :: version :: 12")],
            isolation=False,
        )
    # The null variant takes its namespaces from [variant]; without the table, no build.
    plain = write_project(tmp_path / "plain", EXAMPLES["hatchling"])
    with pytest.raises(BuildError, match=r"null variant needs .*\[variant\] table"):
        build_variant_wheel(plain, tmp_path / "out", null=True, isolation=False)
    assert sorted(p.name for p in src.iterdir()) == ["demo_st.py", "pyproject.toml"]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_no_validate(tmp_path: Path) -> None:
    """--no-validate skips the built-in providers' vocabulary check."""
    src = write_project(tmp_path / "src", EXAMPLES["setuptools"])
    args: list[str | Path] = ["build", src, "-p", "x86_64 :: level :: v9", "-o", tmp_path / "out"]
    args.append("--no-isolation")
    assert_input_error(invoke(*args), "unknown value", "--no-validate")
    result = invoke(*args, "--no-validate", "--label", "v9")
    assert result.exit_code == 0, result.output
    check_variant_wheel(
        Path(result.stdout.strip()),
        label="v9",
        properties=["x86_64 :: level :: v9"],
        namespaces=["x86_64", "blas_lapack"],
        example=EXAMPLES["setuptools"],
        scratch=tmp_path,
    )


@pytest.mark.slow
def test_conversion_failure_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> Path:
        raise WheelError("conversion failed")

    monkeypatch.setattr("wheelwise.wheels.build.make_variant", broken)
    src = write_project(tmp_path / "src", EXAMPLES["flit"])
    out = tmp_path / "new" / "out"
    assert_input_error(
        invoke("build", src, "-p", "x86_64 :: level :: v3", "-o", out, "--no-isolation"),
        "conversion failed",
    )
    assert not out.exists()
    # An existing output directory keeps what it had, and gets nothing.
    out.mkdir()
    (out / "other.whl").write_bytes(b"")
    assert_input_error(
        invoke("build", src, "-p", "x86_64 :: level :: v3", "-o", out, "--no-isolation"),
        "conversion failed",
    )
    assert sorted(p.name for p in out.iterdir()) == ["other.whl"]


def test_invalid_variant_table(tmp_path: Path) -> None:
    src = write_project(tmp_path / "src", EXAMPLES["hatchling"])
    with (src / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write('\n[variant]\nvariants = {}\n[variant.default-priorities]\nnamespace = ["a"]\n')
    assert_input_error(
        invoke("build", src, "-p", "a :: b :: c", "--no-isolation"), "must not define 'variants'"
    )
