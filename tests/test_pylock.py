"""The ``pylock.toml`` model: reading (PEP 751 + PEP 825 ``variants-json``), writing,
and what every kind of bad input is told."""

from __future__ import annotations

import hashlib
import string
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
import tomli_w
from hypothesis import example, given
from hypothesis import strategies as st

from fuzzkit import bounded
from paths import DATA
from wheelwise.lock import (
    Archive,
    Directory,
    LockError,
    Package,
    PyLock,
    Sdist,
    VariantsJson,
    Vcs,
    Wheel,
    read_pylock,
    wheel_files,
    write_pylock,
)
from wheelwise.untrusted_json import loads_toml
from wheelwise.variants import PEP825_SCHEMA_URL, VariantMetadata

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

REAL_WORLD = DATA / "corpus" / "real-world"
TORCH_29 = REAL_WORLD / "wheelnext-variant-repack_torch-2.9.0-variants.json"
UV_FIXTURE = REAL_WORLD / "astral-uv-wheel-variant-branch_built_by_uv-0.1.0-variants.json"
FUZZ = bounded(100)
SHA = hashlib.sha256(b"wheel").hexdigest()
UTC = timezone.utc
TORCH_TAGS = "cp312-cp312-manylinux_2_28_x86_64"


def torch_metadata() -> VariantMetadata:
    """PyTorch 2.9's published variants.json (a PEP 817 draft), as PEP 825."""
    legacy = VariantMetadata.from_json(TORCH_29.read_bytes(), source=TORCH_29.name)
    return VariantMetadata.from_dict(legacy.to_dict(), source=TORCH_29.name)


def torch_package(labels: tuple[str, ...] | None = None) -> Package:
    metadata = torch_metadata()
    wheels = [
        Wheel(
            url=f"https://files.example.test/torch-2.9.0-{TORCH_TAGS}-{label}.whl",
            upload_time=datetime(2025, 10, 15, 17, 0, 1, 250000, tzinfo=UTC),
            size=900_000_000 + index,
            hashes={"sha256": hashlib.sha256(label.encode()).hexdigest()},
        )
        for index, label in enumerate(labels if labels is not None else metadata.labels)
    ]
    wheels.append(
        Wheel(
            url=f"https://files.example.test/torch-2.9.0-{TORCH_TAGS}.whl",
            hashes={"sha256": SHA, "md5": hashlib.md5(b"wheel").hexdigest()},
        )
    )
    return Package(
        name="torch",
        version="2.9.0",
        requires_python=">=3.10",
        index="https://index.example.test/simple/",
        dependencies=({"name": "filelock"}, {"name": "typing-extensions"}),
        wheels=tuple(wheels),
        variants_json=VariantsJson.from_metadata(metadata),
    )


def plain_package(name: str = "filelock", version: str = "3.20.0") -> Package:
    stem = name.replace("-", "_")
    return Package(
        name=name,
        version=version,
        marker="python_version >= '3.10'",
        index="https://index.example.test/simple/",
        sdist=Sdist(
            url=f"https://files.example.test/{stem}-{version}.tar.gz", hashes={"sha256": SHA}
        ),
        wheels=(
            Wheel(
                name=f"{stem}-{version}-py3-none-any.whl",
                path=f"wheels/{stem}-{version}-py3-none-any.whl",
                hashes={"sha256": SHA},
            ),
        ),
        attestation_identities=({"kind": "GitHub", "repository": f"example/{name}"},),
        tool={"example": {"note": "kept", "when": datetime(2025, 1, 1, 12, 0)}},
    )


def sample_lock() -> PyLock:
    uv_metadata = VariantMetadata.from_json(UV_FIXTURE.read_bytes(), source=UV_FIXTURE.name)
    uv_canonical = VariantMetadata.from_dict(uv_metadata.to_dict(), source=UV_FIXTURE.name)
    built_by_uv = Package(
        name="built-by-uv",
        version="0.1.0",
        wheels=tuple(
            Wheel(
                url=f"https://files.example.test/built_by_uv-0.1.0-py3-none-any-{label}.whl",
                hashes={"sha256": SHA},
            )
            for label in uv_canonical.labels
        ),
        variants_json=VariantsJson.from_metadata(uv_canonical),
    )
    return PyLock(
        created_by="wheelwise",
        environments=("sys_platform == 'linux'", "sys_platform == 'darwin'"),
        requires_python=">=3.10",
        extras=("cuda",),
        dependency_groups=("test",),
        default_groups=("default",),
        packages=(
            torch_package(),
            plain_package(),
            plain_package("typing-extensions", "4.15.0"),
            built_by_uv,
        ),
        tool={"wheelwise": {"command": ["lock", "torch"], "version": 1}},
    )


# -- round trip ------------------------------------------------------------------------


def test_a_lock_with_plain_and_variant_packages_reads_back_equal() -> None:
    lock = sample_lock()
    text = write_pylock(lock)
    back = read_pylock(text.encode(), "pylock.toml")
    assert back == lock
    assert back.warnings == ()
    assert write_pylock(back) == text
    torch = back.package_for("torch")
    assert torch is not None
    assert torch.variants_json is not None
    assert torch.variants_json.metadata == torch_metadata()


def test_written_text_is_stable_and_diff_friendly() -> None:
    text = write_pylock(sample_lock())
    assert text.endswith("\n")
    assert not text.endswith("\n\n")
    # Lines as TOML has them: a key may hold U+2028, which splitlines() breaks on.
    assert all(line == line.rstrip() for line in text.split("\n"))
    top_keys = [line.split(" = ")[0] for line in text.split("\n\n[[packages]]")[0].splitlines()]
    assert top_keys[:1] == ["lock-version"]
    assert [k for k in top_keys if not k.startswith(("    ", "]"))] == [
        "lock-version",
        "environments",
        "requires-python",
        "extras",
        "dependency-groups",
        "default-groups",
        "created-by",
    ]
    names = [line for line in text.splitlines() if line.startswith("name = ")]
    assert names == [
        'name = "built-by-uv"',
        'name = "filelock"',
        'name = "torch"',
        'name = "typing-extensions"',
    ]
    wheel_lines = [line for line in text.splitlines() if "torch-2.9.0-" in line]
    assert wheel_lines == sorted(wheel_lines)
    assert 'hashes = { md5 = "' in text  # md5 before sha256
    # PEP 825's layout: a section, and one inline table per label.
    assert f'[packages.variants-json]\n"$schema" = "{PEP825_SCHEMA_URL}"\n' in text
    assert "\n[packages.variants-json.variants]\n" in text
    assert "\nnull = {}\n" in text
    assert '\n"cuda12.8" = { nvidia = { cuda_version_lower_bound = ["12.0"], ' in text
    assert "upload-time = 2025-10-15T17:00:01.250000Z" in text


def test_a_table_of_sections_only_gets_no_header_of_its_own() -> None:
    lock = PyLock(
        created_by="x",
        packages=(
            Package(name="a", version="1.0", wheels=plain_package("a", "1.0").wheels),
            Package(name="b", version="1.0", directory=Directory(path="b"), tool={"x": {"y": 1}}),
        ),
        tool={"wheelwise": {"inputs-hash": "0"}, "other": {}},
    )
    text = write_pylock(lock)
    assert "\n[tool]\n" not in text
    assert "\n[tool.wheelwise]\n" in text
    assert "\n[tool.other]\n" in text  # an empty table keeps its header
    assert "\n[packages.tool]\n" not in text
    assert "\n[packages.tool.x]\ny = 1\n" in text
    assert text.count("[[packages]]") == 2
    assert read_pylock(text) == lock


def test_packages_and_wheels_are_kept_in_canonical_order() -> None:
    newer, older = plain_package("aaa", "10.0"), plain_package("aaa", "9.0")
    lock = PyLock(created_by="x", packages=(torch_package(), newer, older))
    assert [(p.name, p.version) for p in lock.packages] == [
        ("aaa", "9.0"),
        ("aaa", "10.0"),
        ("torch", "2.9.0"),
    ]
    torch = lock.packages[2]
    assert [w.filename for w in torch.wheels] == sorted(w.filename for w in torch.wheels)


def test_variants_json_is_valid_pep825_metadata(variant_schema_validator: Any) -> None:
    document = tomllib.loads(write_pylock(sample_lock()))
    for package in document["packages"]:
        if "variants-json" in package:
            variant_schema_validator.validate(package["variants-json"])


def test_a_newer_schema_in_variants_json_is_kept_as_written() -> None:
    """PEP 825: tools should preserve the table when they rewrite the lock."""
    document = torch_metadata().to_dict()
    document["$schema"] = "https://variants-schema.wheelnext.dev/peps/825/v0.2.0.json"
    document["future-key"] = {"b": [1, 2], "a": "x"}
    package = Package(
        name="torch",
        version="2.9.0",
        wheels=torch_package().wheels,
        variants_json=VariantsJson(document),
    )
    lock = PyLock(created_by="x", packages=(package,))
    text = write_pylock(lock)
    assert read_pylock(text) == lock
    assert '[packages.variants-json.future-key]\na = "x"\nb = [\n' in text


def test_a_legacy_variants_json_is_inlined_and_read_as_published() -> None:
    """PyTorch 2.9's document is a PEP 817 draft whose providers (``priority``: no
    plugin, always supported) choose the wheel; PEP 825's format has no place for
    them, so a lock keeps the document as published, ``$schema`` and all."""
    published = VariantMetadata.from_json(TORCH_29.read_bytes(), source=TORCH_29.name)
    kept = published.with_variants({k: published.variants[k] for k in ("null", "cuda13.0")})
    package = Package(
        name="torch",
        version="2.9.0",
        wheels=(
            Wheel(
                url=f"https://files.example.test/torch-2.9.0-{TORCH_TAGS}-cuda13.0.whl",
                hashes={"sha256": SHA},
            ),
        ),
        variants_json=VariantsJson.from_metadata(kept),
    )
    text = write_pylock(PyLock(created_by="wheelwise", packages=(package,)))
    (again,) = read_pylock(text).packages
    assert again.variants_json is not None
    document = again.variants_json.document
    assert document["$schema"] == "https://variants-schema.wheelnext.dev/v0.0.2.json"
    assert set(document["variants"]) == {"null", "cuda13.0"}
    assert document["providers"]["priority"] == {"plugin-use": "none", "requires": []}
    metadata = again.variants_json.metadata
    assert metadata.providers == published.providers
    assert metadata.property_priorities == published.property_priorities
    assert metadata.variants == kept.variants


def test_other_sources_round_trip() -> None:
    packages = (
        Package(
            name="from-git",
            vcs=Vcs(
                type="git",
                url="https://git.example.test/x.git",
                requested_revision="main",
                commit_id="0" * 40,
                subdirectory="sub",
            ),
        ),
        Package(name="from-dir", directory=Directory(path="../src", editable=True)),
        Package(
            name="from-archive",
            version="1.0",
            archive=Archive(
                url="https://files.example.test/a.zip",
                size=3,
                upload_time=datetime(2025, 1, 1, tzinfo=UTC),
                hashes={"sha512": hashlib.sha512(b"").hexdigest()},
            ),
        ),
    )
    lock = PyLock(created_by="x", packages=packages)
    assert read_pylock(write_pylock(lock)) == lock


# -- documents from elsewhere ------------------------------------------------------------

# The layout other lockers use: literal strings, indented arrays of tables, offsets,
# local date-times under [tool] (the shape of PEP 751's example).
OTHER_LAYOUT = """\
lock-version = '1.0'
environments = ["sys_platform == 'win32'", "sys_platform == 'linux'"]
requires-python = '== 3.12.*'
created-by = 'another-locker'

[[packages]]
name = 'demo-lib'
version = '2.0.1'
requires-python = '>= 3.9'

    [[packages.wheels]]
    name = 'demo_lib-2.0.1-py3-none-any.whl'
    upload-time = 2025-01-25T11:30:10.164985+00:00
    url = 'https://files.example.test/aa/demo_lib-2.0.1-py3-none-any.whl'
    size = 63152
    hashes = {sha256 = 'c75a69e28a550a7e93789579c22aa26b0f5b83b75dc4e08fe092980051e1090a'}

    [[packages.attestation-identities]]
    kind = 'GitHub'
    repository = 'example/demo-lib'

[[packages]]
name = 'demo-app'
version = '1.0'
dependencies = [
    {name = 'demo-lib'},
]

    [[packages.wheels]]
    url = 'https://files.example.test/bb/demo_app-1.0-cp312-cp312-win_amd64.whl'
    hashes = {sha256 = '83807d445817326b4bcdaaaf8e8e9f1753da04341eceec705c001ff342002e5d'}

[tool.another-locker]
command = ['lock', 'demo-app']
run-on = 2025-03-06T12:28:57.760769
"""


def test_reads_the_layout_other_lockers_write() -> None:
    lock = read_pylock(OTHER_LAYOUT.encode(), "pylock.toml")
    assert lock.created_by == "another-locker"
    assert lock.environments == ("sys_platform == 'linux'", "sys_platform == 'win32'")
    lib = lock.package_for("Demo_Lib")
    assert lib is not None
    assert lib.attestation_identities[0]["kind"] == "GitHub"
    (filename, wheel), *_ = lock.wheel_files(lib)
    assert str(filename) == "demo_lib-2.0.1-py3-none-any.whl"
    assert wheel.size == 63152
    assert wheel.upload_time == datetime(2025, 1, 25, 11, 30, 10, 164985, tzinfo=UTC)
    app = lock.package_for("demo-app")
    assert app is not None
    assert app.dependencies == ({"name": "demo-lib"},)
    assert lock.tool == {
        "another-locker": {
            "command": ["lock", "demo-app"],
            "run-on": datetime(2025, 3, 6, 12, 28, 57, 760769),
        }
    }
    assert read_pylock(write_pylock(lock)) == lock


# PEP 825's own example, as printed: empty hashes, and labels its variants table lacks.
PEP825_EXAMPLE = """\
lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.14"

[[packages]]
name = "numpy"
version = "2.3.4"
index = "https://pypi.anaconda.org/mgorny/simple"
wheels = [
    { url = "https://pypi.anaconda.org/mgorny/simple/numpy/2.3.4/numpy-2.3.4-cp314-cp314-linux_x86_64-openblas.whl", hashes = {} },
    { url = "https://pypi.anaconda.org/mgorny/simple/numpy/2.3.4/numpy-2.3.4-cp314-cp314-linux_x86_64-x86_64_v4_mkl.whl", hashes = {} },
    { url = "https://pypi.anaconda.org/mgorny/simple/numpy/2.3.4/numpy-2.3.4-cp314-cp314-macosx_13_0_x86_64-accelerate.whl", hashes = {} },
    { url = "https://pypi.anaconda.org/mgorny/simple/numpy/2.3.4/numpy-2.3.4-cp314-cp314-macosx_13_0_x86_64-openblas.whl", hashes = {} },
]

[packages.variants-json]
"$schema" = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"

[packages.variants-json.default-priorities]
namespace = [ "x86_64", "aarch64", "blas_lapack" ]

[packages.variants-json.variants]
null = { }
x86_64_v3_openblas = { "blas_lapack" = { "library" = ["openblas"]}, "x86_64" = { "level" = ["v3"]}  }
x86_64_v4_mkl = { "blas_lapack" = { "library" = ["mkl"]}, "x86_64" = { "level" = ["v4"]}  }
"""  # noqa: E501


def test_pep825_example_is_refused_for_what_it_leaves_out() -> None:
    with pytest.raises(LockError) as empty:
        read_pylock(PEP825_EXAMPLE, "pep825.toml")
    assert str(empty.value) == (
        "pep825.toml: packages[0].wheels[0].hashes: needs at least one hash; "
        "add e.g. sha256 = '...'"
    )
    hashed = PEP825_EXAMPLE.replace("hashes = {}", f'hashes = {{ sha256 = "{SHA}" }}')
    with pytest.raises(LockError) as missing:
        read_pylock(hashed, "pep825.toml")
    assert str(missing.value) == (
        "pep825.toml: packages[0].wheels[0]: variant label 'openblas' of "
        "'numpy-2.3.4-cp314-cp314-linux_x86_64-openblas.whl' is missing from "
        "variants-json; add variants-json.variants.openblas from the release's "
        "*-variants.json"
    )
    complete = hashed.replace(
        "null = { }",
        'null = { }\nopenblas = { "blas_lapack" = { "library" = ["openblas"] } }\n'
        'accelerate = { "blas_lapack" = { "library" = ["accelerate"] } }',
    )
    lock = read_pylock(complete, "pep825.toml")
    numpy = lock.package_for("numpy")
    assert numpy is not None
    assert numpy.variants_json is not None
    labels = [name.variant_label for name, _ in lock.wheel_files(numpy)]
    assert sorted(labels, key=str) == ["accelerate", "openblas", "openblas", "x86_64_v4_mkl"]
    assert read_pylock(write_pylock(lock)) == lock


# -- what bad input is told --------------------------------------------------------------

HEAD = 'lock-version = "1.0"\ncreated-by = "x"\n'
WHEEL = f'{{ url = "https://h.test/demo-1.0-py3-none-any.whl", hashes = {{ sha256 = "{SHA}" }} }}'
VARIANTS = (
    '\n[packages.variants-json]\n"$schema" = "' + PEP825_SCHEMA_URL + '"\n'
    '[packages.variants-json.default-priorities]\nnamespace = ["x86_64"]\n'
    '[packages.variants-json.variants]\nx86_64_v3 = { x86_64 = { level = ["v3"] } }\n'
)


def _variant_wheel(label: str) -> str:
    return (
        f'{{ url = "https://h.test/demo-1.0-py3-none-any-{label}.whl", '
        f'hashes = {{ sha256 = "{SHA}" }} }}'
    )


BAD_INPUTS = [
    pytest.param(b"lock-version = \n", "bad.toml: invalid TOML: ", id="broken-toml"),
    pytest.param(
        b"\xff\xfe",
        "bad.toml: not valid UTF-8 (byte 0); pylock.toml must be UTF-8 encoded TOML",
        id="not-utf8",
    ),
    pytest.param(
        'lock-version = "2.0"\ncreated-by = "x"\npackages = []\n',
        "bad.toml: lock-version: unsupported lock-version '2.0': this wheelwise reads "
        "1.x lock files only; upgrade wheelwise",
        id="major-2",
    ),
    pytest.param(
        "lock-version = 1.0\n",
        "bad.toml: lock-version: expected a string, got a float",
        id="version-float",
    ),
    pytest.param(
        'lock-version = "one"\n',
        "bad.toml: lock-version: expected a version such as '1.0', got 'one'",
        id="version-text",
    ),
    pytest.param(
        'lock-version = "1.0"\npackages = []\n',
        "bad.toml: top level: missing required key 'created-by'; add it",
        id="no-created-by",
    ),
    pytest.param(
        HEAD,
        "bad.toml: top level: missing required key 'packages'; add it",
        id="no-packages",
    ),
    pytest.param(
        HEAD + "packages = []\nlocked = true\n",
        "bad.toml: top level: unknown key 'locked'; pylock.toml 1.0 has no such key "
        "(tool-specific data belongs in [tool] or [packages.tool])",
        id="unknown-key",
    ),
    pytest.param(
        HEAD + "packages = {}\n",
        "bad.toml: packages: expected an array of tables, got a table",
        id="packages-table",
    ),
    pytest.param(
        HEAD + 'extras = "cuda"\npackages = []\n',
        "bad.toml: extras: expected an array of strings, got a string",
        id="extras-string",
    ),
    pytest.param(
        HEAD + "environments = [\"os_name == 'posix'\", 3]\npackages = []\n",
        "bad.toml: environments[1]: expected a string, got an integer",
        id="environment-number",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "a"\nmarker = "variant_namespaces == \'x\'"\n',
        "bad.toml: packages[0].marker: invalid environment marker "
        "\"variant_namespaces == 'x'\": Expected a marker variable or quoted string; "
        "variant markers belong only in dependency specifiers (PEP 825)",
        id="variant-marker",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "Demo_Lib"\n',
        "bad.toml: packages[0].name: package name 'Demo_Lib' is not normalized; write 'demo-lib'",
        id="name-not-normalized",
    ),
    pytest.param(
        HEAD + "[[packages]]\nname = 7\n",
        "bad.toml: packages[0].name: expected a string, got an integer",
        id="name-number",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\nversion = "one"\n',
        "bad.toml: packages[0].version: invalid version 'one'; write a PEP 440 version "
        "such as '1.0'",
        id="bad-version",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\ndirectory = { path = "." }\n[[packages]]\n'
        'name = "demo"\nwheels = [{ url = "https://h.test/demo-1.0-py3-none-any.whl" }]\n',
        "bad.toml: packages[1].wheels[0]: missing required key 'hashes'; add the file's "
        "hashes, e.g. hashes = { sha256 = '...' }",
        id="wheel-without-hashes",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        'wheels = [{ url = "https://h.test/demo-1.0-py3-none-any.whl", '
        'hashes = { sha256 = "abc" } }]\n',
        "bad.toml: packages[0].wheels[0].hashes.sha256: expected 64 hexadecimal digits, got 'abc'",
        id="short-sha256",
    ),
    pytest.param(
        HEAD + f'[[packages]]\nname = "demo"\nwheels = [{{ hashes = {{ sha256 = "{SHA}" }} }}]\n',
        "bad.toml: packages[0].wheels[0]: needs 'url' or 'path' to say where the file is",
        id="wheel-nowhere",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        f'wheels = [{{ path = "demo-1.0.tar.gz", hashes = {{ sha256 = "{SHA}" }} }}]\n',
        "bad.toml: packages[0].wheels[0]: invalid wheel filename 'demo-1.0.tar.gz': must "
        "end with '.whl'; give the wheel's file name in 'name', 'url' or 'path'",
        id="not-a-wheel-name",
    ),
    pytest.param(
        HEAD + f'[[packages]]\nname = "other"\nversion = "1.0"\nwheels = [{WHEEL}]\n',
        "bad.toml: packages[0].wheels[0]: wheel 'demo-1.0-py3-none-any.whl' is not a "
        "wheel of 'other'",
        id="wheel-of-another-package",
    ),
    pytest.param(
        HEAD + f'[[packages]]\nname = "demo"\nversion = "2.0"\nwheels = [{WHEEL}]\n',
        "bad.toml: packages[0].wheels[0]: wheel 'demo-1.0-py3-none-any.whl' is not "
        "version 2.0 of demo",
        id="wheel-of-another-version",
    ),
    pytest.param(
        HEAD + f'[[packages]]\nname = "demo"\nwheels = [{WHEEL}, {WHEEL}]\n',
        "bad.toml: packages[0].wheels[1]: wheel 'demo-1.0-py3-none-any.whl' is listed "
        "twice; keep one entry",
        id="wheel-twice",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        f"wheels = [{WHEEL}, {_variant_wheel('x86_64_v3')}, {_variant_wheel('x86_64_v4')}]\n"
        + VARIANTS,
        "bad.toml: packages[0].wheels[2]: variant label 'x86_64_v4' of "
        "'demo-1.0-py3-none-any-x86_64_v4.whl' is missing from variants-json; add "
        "variants-json.variants.x86_64_v4 from the release's *-variants.json",
        id="label-missing",
    ),
    pytest.param(
        HEAD + f'[[packages]]\nname = "demo"\nwheels = [{WHEEL}, {_variant_wheel("null")}]\n',
        "bad.toml: packages[0]: variant wheels ('demo-1.0-py3-none-any-null.whl') but no "
        "[packages.variants-json]; inline the release's *-variants.json there (PEP 825)",
        id="no-variants-json",
    ),
    pytest.param(
        HEAD
        + f'[[packages]]\nname = "demo"\nwheels = [{_variant_wheel("x86_64_v3")}]\n'
        + VARIANTS.replace('"$schema" = "' + PEP825_SCHEMA_URL + '"\n', ""),
        "bad.toml: packages[0].variants-json: missing required key '$schema'; PEP 825 "
        f'keeps it, e.g. "$schema" = "{PEP825_SCHEMA_URL}"',
        id="no-schema",
    ),
    pytest.param(
        HEAD
        + f'[[packages]]\nname = "demo"\nwheels = [{_variant_wheel("x86_64_v3")}]\n'
        + VARIANTS.replace('level = ["v3"]', 'level = "v3"'),
        "bad.toml: packages[0].variants-json: variants.x86_64_v3.x86_64.level: expected a "
        "list of strings, got a string",
        id="variants-json-wrong-type",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\nversion = "1.0"\n',
        "bad.toml: packages[0]: no source: give 'wheels' or 'sdist', or one of 'vcs', "
        "'directory' and 'archive'",
        id="no-source",
    ),
    pytest.param(
        HEAD
        + f'[[packages]]\nname = "other"\nwheels = [{_variant_wheel("x86_64_v3")}]\n'
        + VARIANTS,
        "bad.toml: packages[0].wheels[0]: wheel 'demo-1.0-py3-none-any-x86_64_v3.whl' is not "
        "a wheel of 'other'",
        id="variant-wheel-of-another-package",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\nversion = "1.0"\n'
        'sdist = { url = "https://h.test/demo-2.0.tar.gz", hashes = { sha256 = "' + SHA + '" } }\n',
        "bad.toml: packages[0].sdist: sdist 'demo-2.0.tar.gz' is not version 1.0 of demo",
        id="sdist-of-another-version",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        'vcs = { type = "git", url = "https://g.test/x", commit-id = "abc" }\n'
        f"wheels = [{WHEEL}]\n",
        "bad.toml: packages[0]: 'vcs' and 'wheels' are mutually exclusive; keep one source",
        id="two-sources",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\nvcs = { type = "git", url = "https://g.test/x" }\n',
        "bad.toml: packages[0].vcs: missing required key 'commit-id'; add it",
        id="vcs-without-commit",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        'wheels = [{ url = "https://h.test/demo-1.0-py3-none-any.whl", size = "12", '
        f'hashes = {{ sha256 = "{SHA}" }} }}]\n',
        "bad.toml: packages[0].wheels[0].size: expected the file size in bytes, got '12'",
        id="size-string",
    ),
    pytest.param(
        HEAD + '[[packages]]\nname = "demo"\n'
        'wheels = [{ url = "https://h.test/demo-1.0-py3-none-any.whl", '
        f'upload-time = 2025-01-01T00:00:00+02:00, hashes = {{ sha256 = "{SHA}" }} }}]\n',
        "bad.toml: packages[0].wheels[0].upload-time: 2025-01-01T00:00:00+02:00 is not in "
        "UTC; record it in UTC ('Z')",
        id="upload-time-not-utc",
    ),
    pytest.param(
        HEAD
        + '[[packages]]\nname = "demo"\ndirectory = { path = "." }\n[packages.tool]\n'
        + "x = "
        + "[" * 40
        + "]" * 40
        + "\n",
        "bad.toml: packages[0].tool: nested deeper than 32 levels; flatten it",
        id="tool-too-deep",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD_INPUTS)
def test_bad_input_is_one_line_naming_file_and_place(data: bytes | str, message: str) -> None:
    with pytest.raises(LockError) as info:
        read_pylock(data, "bad.toml")
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(message) if message.endswith(": ") else text == message


def test_a_newer_minor_version_is_read_with_warnings() -> None:
    data = (
        'lock-version = "1.1"\ncreated-by = "x"\nnew-top = 1\n'
        f'[[packages]]\nname = "demo"\nnew-key = "y"\nwheels = [{WHEEL}]\n'
    )
    lock = read_pylock(data, "new.toml")
    assert lock.warnings == (
        "new.toml: lock-version 1.1 is newer than the 1.0 this wheelwise knows; keys it "
        "does not know are ignored",
        "new.toml: new-top: unknown key ignored (lock-version 1.1)",
        "new.toml: packages[0].new-key: unknown key ignored (lock-version 1.1)",
    )
    package = lock.package_for("demo")
    assert package is not None
    assert len(package.wheels) == 1


# -- what the installer will ask ----------------------------------------------------------


def test_package_for_narrows_by_marker_and_refuses_ambiguity() -> None:
    linux = Package(name="demo", version="1.0", marker="sys_platform == 'linux'")
    windows = Package(name="demo", version="2.0", marker="sys_platform == 'win32'")
    lock = PyLock(created_by="x", packages=(linux, windows), source="two.toml")
    assert lock.package_for("demo", {"sys_platform": "win32"}) == windows
    assert lock.package_for("Demo", {"sys_platform": "linux"}) == linux
    assert lock.package_for("demo", {"sys_platform": "darwin"}) is None
    assert lock.package_for("absent") is None
    with pytest.raises(LockError) as info:
        lock.package_for("demo")
    assert str(info.value) == (
        "two.toml: 2 entries for package 'demo' apply (demo 1.0, demo 2.0); give each "
        "a 'marker' so that one applies per environment"
    )
    with pytest.raises(LockError) as wrong:
        lock.package_for("demo", {"sys_platform": frozenset({"linux"})})
    assert str(wrong.value).startswith(
        "two.toml: package demo 1.0: marker \"sys_platform == 'linux'\" cannot be evaluated "
        "(Set-valued marker 'sys_platform' can only be used"
    )
    assert str(wrong.value).endswith("; fix the marker or the environment given")


def test_extras_and_groups_take_part_in_markers() -> None:
    dev = Package(name="pytest", version="8.0", marker="'dev' in dependency_groups")
    lock = PyLock(created_by="x", packages=(dev,), default_groups=("dev",))
    groups = frozenset(lock.default_groups)
    assert lock.package_for("pytest", {"dependency_groups": groups, "extras": frozenset()}) == dev
    assert (
        lock.package_for("pytest", {"dependency_groups": frozenset(), "extras": frozenset()})
        is None
    )


@pytest.mark.parametrize(
    ("package", "what"),
    [
        (
            Package(name="g", vcs=Vcs(type="git", url="https://g.test/x", commit_id="a")),
            "package g is locked from a git repository (vcs) only",
        ),
        (Package(name="d", directory=Directory(path=".")), "package d is locked from a local"),
        (
            Package(name="s", version="1.0", sdist=Sdist(path="s-1.0.tar.gz", hashes={"a": "b"})),
            "package s 1.0 is locked from an sdist only",
        ),
        (Package(name="e"), "package e lists no wheels"),
    ],
)
def test_packages_without_wheels_are_reported_when_asked(package: Package, what: str) -> None:
    lock = PyLock(created_by="x", packages=(package,), source="src.toml")
    assert lock.package_for(package.name) == package  # reading them is fine
    with pytest.raises(LockError) as info:
        lock.wheel_files(package)
    assert str(info.value).startswith(f"src.toml: {what}")
    assert str(info.value).endswith(
        "wheelwise installs wheels only: lock it again with wheels (or install it with "
        "another tool)"
    )


def test_wheel_files_parse_the_names() -> None:
    pairs = wheel_files(torch_package(("cuda12.8", "null")))
    assert [(name.variant_label, wheel.filename) for name, wheel in pairs] == [
        ("cuda12.8", f"torch-2.9.0-{TORCH_TAGS}-cuda12.8.whl"),
        ("null", f"torch-2.9.0-{TORCH_TAGS}-null.whl"),
        (None, f"torch-2.9.0-{TORCH_TAGS}.whl"),
    ]


def test_a_wheel_name_comes_from_name_then_path_then_url() -> None:
    hashes = {"sha256": SHA}
    assert (
        Wheel(name="a.whl", path="b.whl", url="https://h/c.whl", hashes=hashes).filename == "a.whl"
    )
    assert Wheel(path="dir\\sub/b.whl", url="https://h/c.whl", hashes=hashes).filename == "b.whl"
    assert Wheel(url="https://h/x/c%2Bd.whl?x=1#f", hashes=hashes).filename == "c+d.whl"


def test_writing_an_invalid_lock_is_refused() -> None:
    bad = Package(
        name="demo", wheels=(Wheel(url="https://h.test/demo-1.0-py3-none-any.whl", hashes={}),)
    )
    with pytest.raises(LockError) as info:
        write_pylock(PyLock(created_by="x", packages=(bad,), source="out.toml"))
    assert str(info.value) == (
        "cannot write an invalid lock: out.toml: packages[0].wheels[0].hashes: needs at "
        "least one hash; add e.g. sha256 = '...'"
    )


# -- fuzzing -----------------------------------------------------------------------------

KEYS = st.sampled_from(
    [
        "lock-version",
        "created-by",
        "packages",
        "environments",
        "requires-python",
        "extras",
        "name",
        "version",
        "marker",
        "wheels",
        "sdist",
        "vcs",
        "archive",
        "directory",
        "url",
        "path",
        "hashes",
        "sha256",
        "size",
        "upload-time",
        "variants-json",
        "$schema",
        "default-priorities",
        "namespace",
        "variants",
        "tool",
        "kind",
        "commit-id",
        "type",
    ]
) | st.text(max_size=5)
LEAVES = (
    st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.datetimes(timezones=st.none() | st.just(UTC))
    | st.dates()
    | st.sampled_from(
        [
            "1.0",
            "1.7",
            "3.0",
            "demo",
            "Demo_X",
            SHA,
            PEP825_SCHEMA_URL,
            "https://h.test/demo-1.0-py3-none-any-x86_64_v3.whl",
            "demo-1.0-py3-none-any.whl",
            "os_name == 'nt'",
            "(" * 2000,
            "9" * 5000,
            "a-" + "9" * 5000 + "-py3-none-any.whl",
        ]
    )
    | st.text(max_size=10)
)
TOMLISH = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=25,
)


def _lockish(packages: list[Any], extra: dict[str, Any]) -> str:
    document: dict[str, Any] = {"lock-version": "1.0", "created-by": "x", "packages": packages}
    document.update(extra)
    return tomli_w.dumps(document)


DOCUMENTS = st.one_of(
    st.binary(max_size=300),
    st.dictionaries(KEYS, TOMLISH, max_size=6).map(tomli_w.dumps),
    st.builds(
        _lockish,
        st.lists(st.dictionaries(KEYS, TOMLISH, max_size=6), max_size=3),
        st.dictionaries(KEYS, TOMLISH, max_size=3),
    ),
)


def _check_outcome(read: Callable[[], PyLock], source: str) -> None:
    """A lock that writes and reads back equal, or one line naming *source*."""
    try:
        outcome: PyLock | LockError = read()
    except LockError as exc:
        outcome = exc
    if isinstance(outcome, LockError):
        assert "\n" not in str(outcome)
        assert str(outcome).startswith(f"{source}: ")
    else:
        assert read_pylock(write_pylock(outcome), source) == outcome


@pytest.mark.slow
@FUZZ
@given(DOCUMENTS)
@example(b"a = " + b"[" * 50_000 + b"]" * 50_000)
@example(_lockish([{"name": "demo", "marker": "(" * 3000 + "os_name == 'nt'" + ")" * 3000}], {}))
@example(_lockish([{"name": "demo", "version": "9" * 5000}], {}))
@example(
    _lockish(
        [{"name": "a", "wheels": [{"name": "a-" + "9" * 5000 + "-py3-none-any.whl"}]}],
        {},
    )
)
def test_any_document_gives_a_lock_or_a_lock_error(data: bytes | str) -> None:
    _check_outcome(lambda: read_pylock(data, "fuzz.toml"), "fuzz.toml")


def _mutations(document: dict[str, Any]) -> st.SearchStrategy[str]:
    """*document* with one value somewhere in it replaced by anything TOML-shaped."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, (*path, key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, (*path, index))

    walk(document, ())

    def mutate(path: tuple[Any, ...], junk: Any) -> str:
        copy = loads_toml(tomli_w.dumps(document))
        if not path:
            return tomli_w.dumps({"junk": junk})
        parent = copy
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = junk
        return tomli_w.dumps(copy)

    return st.builds(mutate, st.sampled_from(paths), TOMLISH)


SAMPLE_DOCUMENT = loads_toml(write_pylock(sample_lock()))


@pytest.mark.slow
@FUZZ
@given(_mutations(SAMPLE_DOCUMENT))
def test_a_valid_lock_with_one_value_changed_gives_a_lock_or_a_lock_error(text: str) -> None:
    _check_outcome(lambda: read_pylock(text, "mutated.toml"), "mutated.toml")


# -- round trip of generated locks -----------------------------------------------------------

SMALL_METADATA = VariantMetadata.build(
    ["x86_64", "blas_lapack"],
    {
        "null": {},
        "x86_64_v3": {"x86_64": {"level": ["v3"]}},
        "v4_mkl": {"x86_64": {"level": ["v4"]}, "blas_lapack": {"library": ["mkl"]}},
    },
)
NAMES = st.from_regex(r"[a-z][a-z0-9]{0,4}(-[a-z0-9]{1,3})?", fullmatch=True)
VERSIONS = st.builds("{}.{}".format, st.integers(0, 30), st.integers(0, 30))
TAGS = st.sampled_from(
    ["py3-none-any", "cp312-cp312-manylinux_2_28_x86_64", "cp313-abi3-win_amd64"]
)
MARKERS = st.sampled_from(
    ["sys_platform == 'linux'", "python_version >= '3.11'", "'cuda' in extras", "os_name == 'nt'"]
)
DIGESTS = st.binary(max_size=8).map(lambda data: hashlib.sha256(data).hexdigest())
TIMES = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
TEXT = st.text(string.printable + "é\u2028\x00", max_size=8)
TOOL_VALUES = st.recursive(
    st.booleans() | st.integers() | TEXT | st.floats(allow_nan=False) | TIMES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=10,
)
TOOLS = st.none() | st.dictionaries(TEXT, TOOL_VALUES, max_size=3)


@st.composite
def packages(draw: st.DrawFn) -> Package:
    name = draw(NAMES)
    version = draw(VERSIONS)
    stem = f"{name.replace('-', '_')}-{version}"
    variant = draw(st.booleans())
    labels = st.sampled_from([None, *SMALL_METADATA.labels]) if variant else st.just(None)
    names = draw(
        st.lists(
            st.builds(
                lambda tag, label: f"{stem}-{tag}" + (f"-{label}" if label else "") + ".whl",
                TAGS,
                labels,
            ),
            max_size=4,
            unique=True,
        )
    )
    wheels = tuple(
        Wheel(
            name=draw(st.sampled_from([None, filename])),
            url=f"https://files.example.test/{filename}",
            path=draw(st.none() | st.just(f"wheels/{filename}")),
            size=draw(st.none() | st.integers(0, 2**40)),
            upload_time=draw(st.none() | TIMES),
            hashes={"sha256": draw(DIGESTS), **draw(st.sampled_from([{}, {"md5": "0" * 32}]))},
        )
        for filename in names
    )
    sdist = draw(
        st.none()
        | st.builds(
            lambda d: Sdist(url=f"https://f.test/{stem}.tar.gz", hashes={"sha256": d}), DIGESTS
        )
    )
    return Package(
        name=name,
        version=version,
        marker=draw(st.none() | MARKERS),
        requires_python=draw(st.sampled_from([None, ">=3.10", ">=3.8,<4"])),
        dependencies=tuple({"name": n} for n in draw(st.lists(NAMES, max_size=2))),
        index=draw(st.sampled_from([None, "https://index.example.test/simple/"])),
        sdist=sdist,
        wheels=wheels,
        # PEP 751: a package without files has one direct source.
        directory=None if wheels or sdist else Directory(path=f"src/{stem}"),
        attestation_identities=tuple(
            {"kind": k} for k in draw(st.lists(st.sampled_from(["GitHub", "GitLab"]), max_size=2))
        ),
        variants_json=VariantsJson.from_metadata(SMALL_METADATA) if variant else None,
        tool=draw(TOOLS),
    )


LOCKS = st.builds(
    lambda **fields: PyLock(**fields),
    created_by=TEXT,
    environments=st.none() | st.lists(MARKERS, max_size=2).map(tuple),
    requires_python=st.sampled_from([None, ">=3.10"]),
    extras=st.lists(NAMES, max_size=2).map(tuple),
    dependency_groups=st.lists(NAMES, max_size=2).map(tuple),
    default_groups=st.lists(NAMES, max_size=2).map(tuple),
    packages=st.lists(packages(), max_size=4).map(tuple),
    tool=TOOLS,
)


@pytest.mark.slow
@FUZZ
@given(LOCKS)
def test_generated_locks_read_back_equal(lock: PyLock) -> None:
    text = write_pylock(lock)
    assert read_pylock(text.encode(), "gen.toml") == lock
    assert text.endswith("\n")
    assert not text.endswith("\n\n")
    # Lines as TOML has them: a key may hold U+2028, which splitlines() breaks on.
    assert all(line == line.rstrip() for line in text.split("\n"))
    assert write_pylock(read_pylock(text)) == text
