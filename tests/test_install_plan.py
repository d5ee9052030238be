"""The installer's pieces below the CLI: requirements files, the index finder, the
installation report's metadata form."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import canonicalize_name

from indexkit import demo_wheel
from wheelfactory import make_wheel, variant_doc
from wheelwise.client.connection import HostPattern
from wheelwise.client.index_client import IndexClient, IndexSource
from wheelwise.environment.interpreter import PendingEnvironment, TargetEnvironment
from wheelwise.install.plan import InstallOptions, metadata_json, run_install
from wheelwise.models.errors import ExternallyManagedError
from wheelwise.resolve.finder import IndexFinder, requires_dist
from wheelwise.resolve.reqfile import RequirementsFileError, read_requirements

TAGS = [Tag("py3", "none", "any")]


def test_requirements_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.txt").write_text("extra-pkg>=2 ; python_version >= '3'\n")
    (tmp_path / "pins.txt").write_text("gpukit==1.0\n")
    main = tmp_path / "requirements.txt"
    main.write_text(
        "# comment\n"
        "--index-url https://example.org/simple/\n"
        "--extra-index-url=https://extra.example.org/simple/\n"
        "-f wheels\n"
        "\n"
        "app[cli] >= 1.0  # trailing comment\n"
        "long-name \\\n"
        "   ==3.0\n"
        "-r sub/more.txt\n"
        "-c pins.txt\n"
    )
    found = read_requirements(main)
    assert found.requirements == [
        "app[cli] >= 1.0",
        "long-name    ==3.0",
        "extra-pkg>=2 ; python_version >= '3'",
    ]
    assert found.constraints == ["gpukit==1.0"]
    assert found.index_url == "https://example.org/simple/"
    assert found.extra_index_urls == ["https://extra.example.org/simple/"]
    assert found.find_links == [str(tmp_path / "wheels")]


def test_requirements_file_build_options(tmp_path: Path) -> None:
    """-e (a folder relative to the file's own), --only-binary and --no-binary, as pip
    writes them in requirements files."""
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "r.txt"
    path.write_text(
        "-e ../project\n--editable=/abs/other\n--only-binary :all:\n--no-binary=docopt\nx\n"
    )
    found = read_requirements(path)
    assert found.editables == [str(tmp_path / "sub" / ".." / "project"), "/abs/other"]
    assert found.only_binary == [":all:"]
    assert found.no_binary == ["docopt"]
    assert found.requirements == ["x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--use-pep517\n", "option --use-pep517 is not supported"),
        ("-e\n", "-e needs a value"),
        ("-r\n", "-r needs a value"),
        ("-r missing.txt\n", "requirements file not found"),
        ("-r https://example.org/r.txt\n", "not from a URL; download it first"),
    ],
)
def test_requirements_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(RequirementsFileError, match=message):
        read_requirements(path)


def test_requirements_file_flags(tmp_path: Path) -> None:
    """pip's flags in a requirements file, and --trusted-host, a host each."""
    path = tmp_path / "r.txt"
    path.write_text(
        "--pre\n--no-index\n--require-hashes\n--trusted-host example.org\n"
        "--trusted-host [::1]:8443\nx\n"
    )
    found = read_requirements(path)
    assert (found.pre, found.no_index, found.require_hashes) == (True, True, True)
    assert found.trusted_hosts == [HostPattern("example.org"), HostPattern("::1", 8443)]
    assert found.requirements == ["x"]


def test_requirements_file_hashes(tmp_path: Path) -> None:
    """``--hash`` options after a requirement, as pip-compile --generate-hashes
    writes them (one per line, joined by backslashes)."""
    digest = "A" * 64
    path = tmp_path / "r.txt"
    path.write_text(
        f"alpha==1.1 \\\n    --hash=sha256:{digest} \\\n    --hash sha384:{'b' * 96}\n"
        f"beta==2.0 --hash=sha256:{'c' * 64}  # via alpha\n"
        f"alpha==1.1 --hash=sha512:{'d' * 128}\n"
        "gamma==3\n"
    )
    found = read_requirements(path)
    assert found.requirements == ["alpha==1.1", "beta==2.0", "alpha==1.1", "gamma==3"]
    assert found.hashes == {
        "alpha==1.1": (("sha256", "a" * 64), ("sha384", "b" * 96), ("sha512", "d" * 128)),
        "beta==2.0": (("sha256", "c" * 64),),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"alpha==1 --hash=md5:{'0' * 32}\n", "with sha256, sha384 or sha512"),
        ("alpha==1 --hash=sha256:abc\n", "is not ALGORITHM:HEX"),
        (f"alpha==1 --hash=sha256:{'0' * 64} --pre\n", "'--pre' after --hash"),
        (f"--hash=sha256:{'0' * 64}\n", "option --hash is not supported"),
    ],
)
def test_requirements_file_hash_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(RequirementsFileError, match=message):
        read_requirements(path)
    constraints = tmp_path / "c.txt"
    constraints.write_text(f"alpha==1 --hash=sha256:{'0' * 64}\n")
    with pytest.raises(RequirementsFileError, match="not a constraint"):
        read_requirements(constraints, constraint=True)


def test_requirements_file_cycle(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("-r r.txt\n")
    with pytest.raises(RequirementsFileError, match="nest too deeply"):
        read_requirements(path)


def test_requires_dist_and_metadata_json() -> None:
    raw = (
        b"Metadata-Version: 2.1\nName: app\nVersion: 1.0\nKeywords: a, b\n"
        b"Requires-Dist: x>=1\nRequires-Dist: y; extra == 'cli'\nProvides-Extra: cli\n\nHello\n"
    )
    assert requires_dist(raw) == ["x>=1", "y; extra == 'cli'"]
    assert metadata_json(raw) == {
        "metadata_version": "2.1",
        "name": "app",
        "version": "1.0",
        "keywords": ["a", "b"],
        "requires_dist": ["x>=1", "y; extra == 'cli'"],
        "provides_extra": ["cli"],
        "description": "Hello\n",
    }


def finder(tmp_path: Path, *folders: Path) -> IndexFinder:
    client = IndexClient(cache=False)
    sources = [IndexSource.find_links(folder) for folder in folders]
    return IndexFinder(sources, client, tags=TAGS, python_version="3.11.0", cache_dir=tmp_path)


def test_first_source_with_a_viable_wheel_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    # The first source has 1.0 for Python 2 only, and 2.0 for this Python.
    make_wheel(first, "pkg-1.0-py2-none-any.whl")
    make_wheel(first, "pkg-2.0-py3-none-any.whl")
    make_wheel(second, "pkg-1.0-py3-none-any.whl")
    make_wheel(second, "pkg-2.0-py3-none-any.whl")
    found = finder(tmp_path / "cache", first, second)
    releases = {str(r.version): r for r in found.versions(canonicalize_name("pkg"))}
    assert releases["1.0"].source.url == second.resolve().as_uri()
    assert releases["2.0"].source.url == first.resolve().as_uri()
    assert [str(f) for f in releases["2.0"].files] == ["pkg-2.0-py3-none-any.whl"]
    assert found.dependencies(releases["2.0"].files[0]) == []


def test_variant_metadata_from_one_wheel_per_label(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    demo_wheel(folder, "pkg-1.0-py3-none-any-null.whl", "null", {})
    demo_wheel(
        folder, "pkg-1.0-py3-none-any-x86_64_v3.whl", "x86_64_v3", {"x86_64": {"level": ["v3"]}}
    )
    make_wheel(folder, "pkg-1.0-py2-none-any-aaaa.whl", variant_doc("aaaa", {}))
    make_wheel(folder, "plain-1.0-py3-none-any.whl")
    found = finder(tmp_path / "cache", folder)
    (release,) = found.versions(canonicalize_name("pkg"))
    metadata = release.variant_metadata()
    assert metadata is not None
    # Only wheels this Python can use were read (not the py2 one).
    assert sorted(metadata.variants) == ["null", "x86_64_v3"]
    (plain,) = found.versions(canonicalize_name("plain"))
    assert plain.variant_metadata() is None
    cached = {str(f): found.has_wheel(f.link.file) for f in release.files}
    assert cached == {
        "pkg-1.0-py2-none-any-aaaa.whl": False,
        "pkg-1.0-py3-none-any-null.whl": True,
        "pkg-1.0-py3-none-any-x86_64_v3.whl": True,
    }
    found.close()


VARIANT_MODULES = (
    "wheelwise.variants.metadata",
    "wheelwise.variants.ordering",
    "wheelwise.variants.merging",
    "wheelwise.variants.properties",
    "wheelwise.wheels.variant_info",
)


def test_variant_modules_load_with_the_first_variant_release(tmp_path: Path) -> None:
    """Most installs have no variant wheel at all: choosing a plain wheel loads none
    of the variant metadata modules; a release with variant wheels loads them."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "plain-1.0-py3-none-any.whl")
    demo_wheel(folder, "pkg-1.0-py3-none-any-null.whl", "null", {})
    code = f"""
import sys
from packaging.tags import Tag
from packaging.utils import canonicalize_name
import wheelwise.cli.install_cmd, wheelwise.install.plan
from wheelwise.client.index_client import IndexClient, IndexSource
from wheelwise.resolve.finder import IndexFinder
from wheelwise.resolve.selection import TargetSpec, select_wheel
from wheelwise.variants.supported import SupportedProperties

variant_modules = {VARIANT_MODULES!r}
found = IndexFinder(
    [IndexSource.find_links({str(folder)!r})], IndexClient(cache=False),
    tags=[Tag("py3", "none", "any")], python_version="3.11.0", cache_dir=None,
)
target = TargetSpec([Tag("py3", "none", "any")], lambda metadata: SupportedProperties())
(plain,) = found.versions(canonicalize_name("plain"))
print(select_wheel(canonicalize_name("plain"), plain, target).file)
print([m for m in variant_modules if m in sys.modules])
(pkg,) = found.versions(canonicalize_name("pkg"))
print(select_wheel(canonicalize_name("pkg"), pkg, target).label)
print([m for m in variant_modules if m in sys.modules])
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == [
        "plain-1.0-py3-none-any.whl",
        "[]",
        "null",
        str(list(VARIANT_MODULES)),
    ]


def test_externally_managed_target_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = TargetEnvironment.current()
    managed = dataclasses.replace(env, externally_managed="use apt")
    monkeypatch.setattr(PendingEnvironment, "result", lambda self: managed)
    options = InstallOptions(requirements=["pkg"], index_url=str(tmp_path))
    with pytest.raises(ExternallyManagedError, match="--break-system-packages"):
        run_install(options)


# -- one hash policy for every download path -------------------------------------------


@pytest.mark.parametrize("in_memory", [True, False], ids=["early", "on-disk"])
@pytest.mark.parametrize("weak", ["md5", "sha1"])
def test_a_weak_hash_is_checked_but_not_trusted_on_any_download_path(
    tmp_path: Path, weak: str, in_memory: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index page that gives a wheel only an md5 or sha1: the wheel read while
    resolving (no PEP 658 file) and the one installed are fetched the same way,
    both refused when that hash is wrong, as pip and uv refuse them; a right one
    installs, unless hash-checking mode is given another sha256 for it."""
    import hashlib

    from indexkit import http_server
    from installkit import make_venv
    from wheelwise.install import plan
    from wheelwise.models.errors import DownloadError

    monkeypatch.setenv("NO_PROXY", "*")
    if not in_memory:  # nothing downloaded early: the resolver reads the wheel itself
        monkeypatch.setattr(plan, "IN_MEMORY_DOWNLOADS", 0)
    site = tmp_path / "site"
    metadata = b"Metadata-Version: 2.1\nName: solo\nVersion: 1.0\n"
    (site / "files").mkdir(parents=True)
    wheel = make_wheel(
        site / "files",
        "solo-1.0-py3-none-any.whl",
        extra_members={"solo-1.0.dist-info/METADATA": metadata},
        record=True,
    )
    (site / "simple" / "solo").mkdir(parents=True)
    (site / "simple" / "index.html").write_text('<a href="solo/">solo</a>\n')
    page = site / "simple" / "solo" / "index.html"

    def link(digest: str) -> None:
        target = f"../../files/solo-1.0-py3-none-any.whl#{weak}={digest}"
        page.write_text(f'<a href="{target}">solo</a>\n')

    python = make_venv(tmp_path / "venv")
    with http_server(site) as base:
        options = InstallOptions(
            requirements=["solo"],
            index_url=f"{base}/simple/",
            python=python,
            no_cache=True,
        )
        link("0" * (32 if weak == "md5" else 40))
        with pytest.raises(DownloadError, match=f"{weak} mismatch"):
            run_install(options)
        link(hashlib.new(weak, Path(wheel).read_bytes()).hexdigest())
        # Hash-checking mode: the index gives no sha256, so the file itself is hashed.
        checking = dataclasses.replace(
            options, requirements=["solo==1.0"], hashes={"solo==1.0": (("sha256", "0" * 64),)}
        )
        with pytest.raises(DownloadError, match=r"sha256 mismatch: expected 0{64}, got"):
            run_install(checking)
        outcome = run_install(options)
    assert [p.name for p in outcome.to_install] == ["solo"]
    assert outcome.report is not None
    site_packages = python.parent.parent / "lib"
    assert list(site_packages.glob("python*/site-packages/solo-1.0.dist-info"))
