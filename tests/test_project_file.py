"""``-r pyproject.toml``, ``--extra``, ``--all-extras`` and ``--group``: the reader
(``wheelwise.resolve.project_file``), bounded fuzzing of what it is given, and real
installs into venvs from a find-links folder, beside uv's install of the same."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexkit import demo_wheel, uv_executable
from installkit import make_venv, site_packages
from variantkit import wheelwise
from wheelwise.resolve.project_file import (
    group_requirements,
    project_requirements,
    split_group,
)
from wheelwise.resolve.reqfile import RequirementsFileError

PROJECT = """\
[project]
name = "My_App"
version = "1.0"
dependencies = ["alpha>=1", "beta; python_version > '3'"]

[project.optional-dependencies]
GPU = ["gamma", "my-app[docs]; sys_platform == 'linux'"]
docs = ["delta; os_name == 'posix'", "my_app[gpu]"]
unused = ["epsilon"]

[dependency-groups]
test = ["zeta", {include-group = "lint"}]
lint = ["eta>=2"]
"""


def _project(tmp_path: Path, text: str = PROJECT) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return path


def test_dependencies_alone(tmp_path: Path) -> None:
    path = _project(tmp_path)
    assert project_requirements(path, [], False) == ["alpha>=1", 'beta; python_version > "3"']


def test_an_extra_names_the_project_itself_under_a_marker(tmp_path: Path) -> None:
    path = _project(tmp_path)
    # "gpu" is "GPU" normalized (PEP 685); it pulls in "docs" on Linux only, and
    # "docs" naming "gpu" again adds nothing.
    assert project_requirements(path, ["gpu"], False) == [
        "alpha>=1",
        'beta; python_version > "3"',
        "gamma",
        'delta; os_name == "posix" and sys_platform == "linux"',
    ]


def test_all_extras(tmp_path: Path) -> None:
    found = project_requirements(_project(tmp_path), [], True)
    assert {"gamma", "epsilon", 'delta; os_name == "posix"'} <= set(found)
    assert not any(text.startswith(("my-app", "my_app")) for text in found)


def test_an_unknown_extra_names_those_there_are(tmp_path: Path) -> None:
    with pytest.raises(RequirementsFileError, match=r"no extra 'cuda' \(its extras: docs, gpu"):
        project_requirements(_project(tmp_path), ["cuda"], False)


def test_dynamic_dependencies_send_the_user_to_the_folder(tmp_path: Path) -> None:
    path = _project(tmp_path, '[project]\nname = "x"\ndynamic = ["dependencies"]\n')
    with pytest.raises(RequirementsFileError, match=r"dynamic.*wheelwise install"):
        project_requirements(path, [], False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.x]\n", "no \\[project\\] table"),
        ('[project]\ndependencies = "alpha"\n', "expected a list of requirement strings"),
        ('[project]\ndependencies = ["alpha >>> 1"]\n', "'alpha >>> 1' is not a requirement"),
        ("[project\n", "invalid TOML"),
        ('[project]\nname = "a"\ndependencies = ["a==1"]\n', "names the project itself"),
    ],
)
def test_a_broken_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RequirementsFileError, match=message) as caught:
        project_requirements(_project(tmp_path, text), [], False)
    assert "\n" not in str(caught.value)
    assert str(tmp_path) in str(caught.value)


def test_a_marker_on_the_extra_itself(tmp_path: Path) -> None:
    """``extra == 'X'`` in X's own list holds for X (uv reads it so), and not in
    another's; mixed with the machine's variables it cannot be split here."""
    text = (
        '[project]\nname = "p"\ndependencies = ["a; extra == \'gpu\'"]\n'
        "[project.optional-dependencies]\n"
        "gpu = [\"b ; extra == 'gpu'\", \"c ; extra == 'cpu'\"]\n"
    )
    path = _project(tmp_path, text)
    assert project_requirements(path, ["gpu"], False) == ["b"]
    mixed = text.replace("extra == 'cpu'", "extra == 'cpu' and os_name == 'posix'")
    with pytest.raises(RequirementsFileError, match="on extra and on the machine at once"):
        project_requirements(_project(tmp_path, mixed), ["gpu"], False)


def test_a_self_reference_in_the_dependencies(tmp_path: Path) -> None:
    text = '[project]\nname = "p"\ndependencies = ["p[x]"]\n'
    text += '[project.optional-dependencies]\nx = ["q"]\n'
    assert project_requirements(_project(tmp_path, text), [], False) == ["q"]


def test_a_relative_file_url_is_refused(tmp_path: Path) -> None:
    text = '[project]\nname = "p"\ndependencies = ["q @ file:./q-1.0-py3-none-any.whl"]\n'
    with pytest.raises(RequirementsFileError, match="a relative file: URL"):
        project_requirements(_project(tmp_path, text), [], False)


def test_a_missing_included_group_is_named(tmp_path: Path) -> None:
    path = _project(tmp_path, '[dependency-groups]\na = [{include-group = "zz"}]\n')
    with pytest.raises(RequirementsFileError, match="'zz' not found"):
        group_requirements(path, ["a"])


def test_groups_include_groups(tmp_path: Path) -> None:
    assert group_requirements(_project(tmp_path), ["test"]) == ["zeta", "eta>=2"]


def test_an_unknown_group_names_those_there_are(tmp_path: Path) -> None:
    with pytest.raises(RequirementsFileError, match=r"no dependency group 'dev' \(its groups"):
        group_requirements(_project(tmp_path), ["dev"])


def test_a_group_cycle_is_one_line(tmp_path: Path) -> None:
    path = _project(tmp_path, '[dependency-groups]\na = [{include-group = "a"}]\n')
    with pytest.raises(RequirementsFileError, match="includes itself"):
        group_requirements(path, ["a"])


def test_group_paths() -> None:
    assert split_group("test") == (Path("pyproject.toml"), "test")
    assert split_group("sub/pyproject.toml:test") == (Path("sub/pyproject.toml"), "test")
    with pytest.raises(RequirementsFileError, match=r"read from a pyproject\.toml"):
        split_group("requirements.txt:test")
    with pytest.raises(RequirementsFileError, match=r"expected \[PATH:\]NAME"):
        split_group("pyproject.toml:")


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_TABLES = st.dictionaries(
    st.sampled_from(["name", "dependencies", "optional-dependencies", "dynamic", "x"]),
    _VALUES,
)


def _toml(document: dict[str, object]) -> str | None:
    try:
        return tomli_w.dumps(document)
    except (TypeError, ValueError):  # None has no TOML form
        return None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    table=_TABLES,
    groups=st.dictionaries(st.text(max_size=6), _VALUES, max_size=3),
    extras=st.lists(st.text(max_size=6), max_size=2),
)
def test_any_document_gives_requirements_or_one_line(
    tmp_path: Path, table: dict[str, object], groups: dict[str, object], extras: list[str]
) -> None:
    text = _toml({"project": table, "dependency-groups": groups})
    if text is None:
        return
    path = _project(tmp_path, text)
    reads: list[Callable[[], list[str]]] = [
        lambda: project_requirements(path, extras, False),
        lambda: project_requirements(path, [], True),
        lambda: group_requirements(path, extras or ["a"]),
    ]
    for read in reads:
        try:
            assert all(isinstance(found, str) for found in read())
        except RequirementsFileError as exc:
            assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the document


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=200))
def test_any_bytes_give_requirements_or_one_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[project]\nname = "a"\n' + data)
    try:
        project_requirements(path, [], True)
    except RequirementsFileError as exc:
        assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the bytes


# -- real installs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project-file") / "wheels"
    folder.mkdir()
    for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        demo_wheel(folder, f"{name}-1.0-py3-none-any.whl")
    demo_wheel(folder, "eta-2.0-py3-none-any.whl")
    return folder


def _installed(python: Path) -> set[str]:
    return {
        path.name.split("-")[0]
        for path in site_packages(python).glob("*.dist-info")
        if not path.name.startswith(("pip-", "setuptools-"))
    }


def test_install_with_an_extra_and_a_group_as_uv_does(wheels: Path, tmp_path: Path) -> None:
    _project(tmp_path)
    args = ["-r", "pyproject.toml", "--extra", "gpu", "--group", "test"]
    ours = make_venv(tmp_path / "ours")
    result = wheelwise(
        ["install", "--python", str(ours), "--no-index", "-f", str(wheels), *args],
        tmp_path / "cache",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    theirs = make_venv(tmp_path / "theirs")
    uv = subprocess.run(
        [uv_executable(), "pip", "install", "--python", str(theirs), "--no-index",
         "--find-links", str(wheels), "--no-cache", *args],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert uv.returncode == 0, uv.stderr
    expected = {"alpha", "beta", "gamma", "zeta", "eta"} | (
        {"delta"} if sys.platform == "linux" else set()
    )
    assert _installed(ours) == expected == _installed(theirs)


def test_install_refuses_an_extra_without_a_project(wheels: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    (tmp_path / "requirements.txt").write_text("alpha\n")
    result = wheelwise(
        ["install", "--python", str(python), "--no-index", "-f", str(wheels),
         "-r", "requirements.txt", "--extra", "gpu"],
        tmp_path / "cache",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--extra gpu needs -r pyproject.toml" in result.stderr
    assert _installed(python) == set()


def test_lock_of_a_group(wheels: Path, tmp_path: Path) -> None:
    _project(tmp_path)
    result = wheelwise(
        ["lock", "--no-index", "-f", str(wheels), "--group", "lint", "-o", "-"],
        tmp_path / "cache",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert 'name = "eta"' in result.stdout
    assert 'name = "alpha"' not in result.stdout


def test_a_dynamic_list_of_other_things_is_no_crash(tmp_path: Path) -> None:
    path = _project(tmp_path, '[project]\nname = "x"\ndynamic = [{a = 1}, 2]\n')
    assert project_requirements(path, [], False) == []
