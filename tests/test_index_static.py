"""``wheelwise index build``: pages, hashes, metadata files, variants.json, atomicity,
incremental rebuilds."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

import pytest
from click.testing import CliRunner

from indexkit import (
    DEMO_NAMESPACES,
    demo_sdist,
    demo_wheel,
    demo_wheels,
    parse_anchors,
    repository_version,
)
from wheelwise import forked_map
from wheelwise.cli.app import cli
from wheelwise.publish import distfiles, static, swap
from wheelwise.publish.errors import IndexBuildError
from wheelwise.publish.static import STATE_FILE, STATE_FORMAT, build_site
from wheelwise.userfiles import read_regular_exactly
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(root: Path) -> dict[str, bytes]:
    """Every file under *root* (relative path -> bytes)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def site_file(site: Path, page: str, url: str) -> Path:
    """The file a link *url* on the page at /*page* points to."""
    resolved = urljoin(f"http://index.test/{page}", url.split("#")[0])
    path = unquote(resolved.removeprefix("http://index.test/"))
    return site / path


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    directory = tmp_path / "wheels"
    demo_wheels(directory)
    # Another project, with a name to normalize and an escaped Requires-Python.
    demo_wheel(directory, "Other_Project-0.1-py3-none-any.whl", requires_python="<4,>=3.9")
    demo_sdist(directory, "demo_pkg-1.0.tar.gz")
    (directory / "README.txt").write_text("not published")
    (directory / "notes.tar.gz").write_bytes(b"not an sdist name")
    return directory


@pytest.fixture
def site(wheels: Path, tmp_path: Path) -> Path:
    build_site(wheels, tmp_path / "site")
    return tmp_path / "site"


def test_layout(site: Path) -> None:
    files = set(tree(site))
    assert {
        "index.html",
        STATE_FILE,
        "simple/index.html",
        "simple/index.json",
        "simple/demo-pkg/index.html",
        "simple/demo-pkg/index.json",
        "simple/other-project/index.html",
        "simple/other-project/index.json",
        "files/demo-pkg/demo_pkg-1.0-py3-none-any.whl",
        "files/demo-pkg/demo_pkg-1.0-py3-none-any.whl.metadata",
        "files/demo-pkg/demo_pkg-1.0.tar.gz",
        "files/demo-pkg/demo_pkg-1.0-variants.json",
        "files/demo-pkg/demo_pkg-2.0-variants.json",
        "files/other-project/Other_Project-0.1-py3-none-any.whl",
    } <= files
    assert not any("README" in f or "notes" in f for f in files)
    assert "files/demo-pkg/demo_pkg-1.0.tar.gz.metadata" not in files


def test_root_pages(site: Path) -> None:
    html = (site / "simple" / "index.html").read_bytes()
    anchors = parse_anchors(html)
    assert {name: attrs["href"] for name, attrs in anchors.items()} == {
        "demo-pkg": "demo-pkg/",
        "other-project": "other-project/",
    }
    assert repository_version(html) == "1.1"
    document = json.loads((site / "simple" / "index.json").read_bytes())
    assert document == {
        "meta": {"api-version": "1.1"},
        "projects": [{"name": "demo-pkg"}, {"name": "other-project"}],
    }


def test_project_html(site: Path, wheels: Path) -> None:
    page = "simple/demo-pkg/"
    html = (site / page / "index.html").read_text()
    anchors = parse_anchors(html)
    assert sorted(anchors) == sorted(
        [p.name for p in wheels.glob("demo_pkg-*")]
        + ["demo_pkg-1.0-variants.json", "demo_pkg-2.0-variants.json"]
    )
    for filename, attrs in anchors.items():
        href = attrs["href"]
        assert href is not None
        target = site_file(site, page, href)
        assert target.name == filename
        assert href.endswith(f"#sha256={sha256(target)}")
        if filename.endswith(".whl"):
            metadata = target.with_name(filename + ".metadata")
            expected = f"sha256={sha256(metadata)}"
            assert attrs["data-core-metadata"] == expected
            assert attrs["data-dist-info-metadata"] == expected
            with zipfile.ZipFile(target) as archive:
                dist_info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
                assert metadata.read_bytes() == archive.read(dist_info)
        else:
            assert "data-core-metadata" not in attrs
    assert anchors["demo_pkg-1.0-py3-none-any.whl"]["data-requires-python"] == ">=3.8"
    assert 'data-requires-python="&gt;=3.8"' in html


def test_requires_python_is_escaped(site: Path) -> None:
    html = (site / "simple" / "other-project" / "index.html").read_text()
    assert 'data-requires-python="&lt;4,&gt;=3.9"' in html
    anchors = parse_anchors(html)
    assert anchors["Other_Project-0.1-py3-none-any.whl"]["data-requires-python"] == "<4,>=3.9"
    document = json.loads((site / "simple" / "other-project" / "index.json").read_bytes())
    assert document["files"][0]["requires-python"] == "<4,>=3.9"


def test_project_json(site: Path) -> None:
    page = "simple/demo-pkg/"
    document = json.loads((site / page / "index.json").read_bytes())
    assert document["meta"] == {"api-version": "1.1"}
    assert document["name"] == "demo-pkg"
    assert document["versions"] == ["1.0", "2.0"]
    html_names = sorted(parse_anchors((site / page / "index.html").read_bytes()))
    assert sorted(f["filename"] for f in document["files"]) == html_names
    for entry in document["files"]:
        target = site_file(site, page, entry["url"])
        assert entry["hashes"] == {"sha256": sha256(target)}
        assert entry["size"] == target.stat().st_size
        if entry["filename"].endswith(".whl"):
            metadata_hash = sha256(target.with_name(target.name + ".metadata"))
            assert entry["core-metadata"] == {"sha256": metadata_hash}
            # PEP 714: never the old key in JSON (older pips crash on it).
            assert "dist-info-metadata" not in entry
        else:
            assert "core-metadata" not in entry


def test_variants_json(site: Path, variant_schema_validator: Any) -> None:
    path = site / "files" / "demo-pkg" / "demo_pkg-1.0-variants.json"
    data = path.read_bytes()
    document = json.loads(data)
    variant_schema_validator.validate(document)
    assert document == {
        "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": ["x86_64"]},
        "variants": {"null": {}, "x86_64_v1": {"x86_64": {"level": ["v1"]}}},
    }
    # Canonical: exactly what the library writes for that document.
    assert data == VariantMetadata.from_json(data).to_bytes()


def test_variants_json_merges_labels_and_namespaces(
    tmp_path: Path, variant_schema_validator: Any
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "gpu-1.0-py3-none-any-cu12.whl", "cu12", {"nvidia": {"cuda": ["12"]}})
    demo_wheel(
        wheels,
        "gpu-1.0-py3-none-any-v3.whl",
        "v3",
        {"x86_64": {"level": ["v3"]}},
        namespaces=["nvidia", "x86_64"],
    )
    demo_wheel(wheels, "gpu-1.0-py3-none-any.whl")
    build_site(wheels, tmp_path / "site")
    data = (tmp_path / "site" / "files" / "gpu" / "gpu-1.0-variants.json").read_bytes()
    document = json.loads(data)
    variant_schema_validator.validate(document)
    assert document["default-priorities"] == {"namespace": ["nvidia", "x86_64"]}
    assert document["variants"] == {
        "cu12": {"nvidia": {"cuda": ["12"]}},
        "v3": {"x86_64": {"level": ["v3"]}},
    }


def test_variants_json_only_for_versions_with_variant_wheels(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "pkg-1.0-py3-none-any.whl")
    demo_wheel(wheels, "pkg-2.0-py3-none-any.whl")
    demo_wheel(wheels, "pkg-2.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES)
    build_site(wheels, tmp_path / "site")
    names = sorted(parse_anchors((tmp_path / "site/simple/pkg/index.html").read_bytes()))
    assert [n for n in names if n.endswith(".json")] == ["pkg-2.0-variants.json"]
    document = json.loads((tmp_path / "site/simple/pkg/index.json").read_bytes())
    assert [f["filename"] for f in document["files"] if f["filename"].endswith(".json")] == [
        "pkg-2.0-variants.json"
    ]


def test_base_url_makes_absolute_links(wheels: Path, tmp_path: Path) -> None:
    build_site(wheels, tmp_path / "site", base_url="https://example.test/pypi/")
    root = parse_anchors((tmp_path / "site/simple/index.html").read_bytes())
    assert root["demo-pkg"]["href"] == "https://example.test/pypi/simple/demo-pkg/"
    page = parse_anchors((tmp_path / "site/simple/demo-pkg/index.html").read_bytes())
    href = page["demo_pkg-1.0-py3-none-any.whl"]["href"]
    assert href is not None
    assert href.startswith(
        "https://example.test/pypi/files/demo-pkg/demo_pkg-1.0-py3-none-any.whl#sha256="
    )


@pytest.mark.parametrize(
    "base_url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)//",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/",
        "ftp://example.test/pypi",
        "https:pypi",
        "//example.test/pypi",
        'https://example.test/"><script>',
        "https://example.test/pypi?x=1",
        "https://example.test/pypi#top",
    ],
)
def test_base_url_must_be_http_or_relative(wheels: Path, tmp_path: Path, base_url: str) -> None:
    site = tmp_path / "site"
    with pytest.raises(IndexBuildError, match="http:// or https:// URL"):
        build_site(wheels, site, base_url=base_url)
    result = CliRunner().invoke(
        cli, ["index", "build", str(wheels), "-o", str(site), "--base-url", base_url]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("wheelwise: error: --base-url ")
    assert "http:// or https:// URL" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not site.exists()


@pytest.mark.parametrize(
    ("base_url", "link"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/simple/demo-pkg/"),
        ("HTTPS://example.test/a/b/", "HTTPS://example.test/a/b/simple/demo-pkg/"),
        ("/pypi/", "/pypi/simple/demo-pkg/"),
        ("../mirror", "../mirror/simple/demo-pkg/"),
    ],
)
def test_base_url_forms_accepted(wheels: Path, tmp_path: Path, base_url: str, link: str) -> None:
    build_site(wheels, tmp_path / "site", base_url=base_url)
    root = parse_anchors((tmp_path / "site/simple/index.html").read_bytes())
    assert root["demo-pkg"]["href"] == link


def test_local_version_is_quoted(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "pkg-1.0+cpu-py3-none-any.whl")
    build_site(wheels, tmp_path / "site")
    anchors = parse_anchors((tmp_path / "site/simple/pkg/index.html").read_bytes())
    href = anchors["pkg-1.0+cpu-py3-none-any.whl"]["href"]
    assert href is not None
    assert "pkg-1.0%2Bcpu-py3-none-any.whl" in href
    assert site_file(tmp_path / "site", "simple/pkg/", href).is_file()


def test_build_is_deterministic(wheels: Path, tmp_path: Path) -> None:
    build_site(wheels, tmp_path / "a")
    build_site(wheels, tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


# -- inconsistent or broken input --------------------------------------------------


def test_inconsistent_label_fails_naming_wheels_and_label(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "pkg-1.0-py3-none-any-fast.whl", "fast", {"x86_64": {"level": ["v3"]}})
    demo_wheel(
        wheels, "pkg-1.0-py3-none-linux_x86_64-fast.whl", "fast", {"x86_64": {"level": ["v4"]}}
    )
    with pytest.raises(IndexBuildError) as info:
        build_site(wheels, tmp_path / "site")
    message = str(info.value)
    assert "inconsistent variant metadata" in message
    assert "label 'fast'" in message
    assert "pkg-1.0-py3-none-any-fast.whl" in message
    assert "pkg-1.0-py3-none-linux_x86_64-fast.whl" in message
    assert not (tmp_path / "site").exists()


def test_inconsistent_namespaces_fail(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(
        wheels,
        "pkg-1.0-py3-none-any-a.whl",
        "a",
        {"x86_64": {"level": ["v3"]}},
        namespaces=["x86_64", "nvidia"],
    )
    demo_wheel(
        wheels,
        "pkg-1.0-py3-none-any-b.whl",
        "b",
        {"nvidia": {"cuda": ["12"]}},
        namespaces=["nvidia", "x86_64"],
    )
    with pytest.raises(IndexBuildError, match=r"default-priorities\.namespace") as info:
        build_site(wheels, tmp_path / "site")
    assert "pkg-1.0-py3-none-any-a.whl" in str(info.value)
    assert "pkg-1.0-py3-none-any-b.whl" in str(info.value)


@pytest.mark.parametrize(
    ("filename", "kwargs", "expected"),
    [
        ("pkg-1.0-py3-none-any.whl", {"content": b"not a zip"}, "not a valid wheel"),
        ("pkg-1.0-py3-none-any-v3.whl", {"label": None}, "has no *.dist-info/variant.json"),
        (
            "pkg-1.0-py3-none-any-v3.whl",
            {"label": "v4", "properties": {"x86_64": {"level": ["v4"]}}},
            "must hold exactly the filename's label 'v3'",
        ),
        (
            "pkg-1.0-py3-none-any.whl",
            {"metadata": b"Metadata-Version: 2.1\nName: other\nVersion: 1.0\n"},
            "METADATA says Name: other",
        ),
        ("pkg-1.0-py3-none-any-Bad.whl", {}, "invalid wheel filename"),
    ],
)
def test_broken_wheel_fails_the_build(
    tmp_path: Path, filename: str, kwargs: dict[str, Any], expected: str
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    if "content" in kwargs:
        (wheels / filename).write_bytes(kwargs["content"])
    else:
        extra = {"pkg-1.0.dist-info/METADATA": kwargs["metadata"]} if "metadata" in kwargs else {}
        label = kwargs.get("label")
        properties = kwargs.get("properties", {})
        demo_wheel(wheels, "pkg-1.0-py3-none-any.whl", label, properties, extra_members=extra)
        (wheels / "pkg-1.0-py3-none-any.whl").rename(wheels / filename)
    with pytest.raises(IndexBuildError) as info:
        build_site(wheels, tmp_path / "site")
    assert filename in str(info.value)
    assert expected in str(info.value)


def test_wheel_that_changes_while_read_fails_the_build(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read = read_regular_exactly

    def grow_then_read(path: Path, size: int) -> bytes | None:
        with path.open("ab") as stream:  # a writer appends after the folder was listed
            stream.write(b"more")
        return real_read(path, size)

    monkeypatch.setattr(distfiles, "read_regular_exactly", grow_then_read)
    with pytest.raises(IndexBuildError, match="changed while it was read; run the build again"):
        build_site(wheels, tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_failure_leaves_the_old_site_untouched(wheels: Path, site: Path, tmp_path: Path) -> None:
    before = tree(site)
    demo_wheel(
        wheels,
        "demo_pkg-1.0-py3-none-linux_x86_64-x86_64_v1.whl",
        "x86_64_v1",
        {"x86_64": {"level": ["v2"]}},
    )
    with pytest.raises(IndexBuildError, match="label 'x86_64_v1'"):
        build_site(wheels, site)
    assert tree(site) == before
    # No temporary directory is left next to the site.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "wheels"]


@pytest.mark.parametrize("strategy", ["serial", "fork"])
def test_failure_while_writing_leaves_the_old_site_untouched(
    wheels: Path, site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    before = tree(site)
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any.whl")

    def broken(*args: object, **kwargs: object) -> bytes:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(static, "project_json", broken)
    monkeypatch.setattr(forked_map, "STRATEGY", strategy)  # a forked writer's error too
    monkeypatch.setattr(forked_map, "cores", lambda: 3)
    with pytest.raises(OSError, match="No space left") as info:
        build_site(wheels, site)
    assert info.value.errno == 28
    assert tree(site) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "wheels"]


def test_forked_workers_build_the_same_site(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(30):  # enough projects for every worker to write some
        demo_wheel(wheels, f"extra_{number}-1.0-py3-none-any.whl")
    serial = full_build(wheels, tmp_path / "serial")
    monkeypatch.setattr(forked_map, "STRATEGY", "fork")
    monkeypatch.setattr(forked_map, "cores", lambda: 3)
    forked = full_build(wheels, tmp_path / "forked")
    assert forked == serial
    assert len([name for name in forked if name.endswith(".metadata")]) == 36


@pytest.mark.usefixtures("forking")
def test_forked_workers_report_a_broken_wheel(wheels: Path, tmp_path: Path) -> None:
    (wheels / "pkg-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    with pytest.raises(IndexBuildError, match=r"pkg-1\.0-py3-none-any\.whl.*not a valid wheel"):
        build_site(wheels, tmp_path / "site")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wheels"]


@pytest.mark.parametrize("atomic_exchange", [True, False])
def test_rebuild_replaces_the_site(
    wheels: Path, site: Path, monkeypatch: pytest.MonkeyPatch, atomic_exchange: bool
) -> None:
    if not atomic_exchange:
        monkeypatch.setattr(swap, "exchange", lambda first, second: False)
    (wheels / "demo_pkg-1.0.tar.gz").unlink()
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any.whl")
    build_site(wheels, site)
    names = parse_anchors((site / "simple/demo-pkg/index.html").read_bytes())
    assert "demo_pkg-3.0-py3-none-any.whl" in names
    assert "demo_pkg-1.0.tar.gz" not in names
    assert not (site / "files/demo-pkg/demo_pkg-1.0.tar.gz").exists()
    assert sorted(p.name for p in site.parent.iterdir()) == ["site", "wheels"]


def test_refuses_to_replace_a_foreign_directory(wheels: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "www"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(IndexBuildError, match="was not built by 'wheelwise index build'"):
        build_site(wheels, foreign)
    assert (foreign / "precious.txt").read_text() == "keep me"


def test_refuses_a_site_that_contains_the_wheels(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    with pytest.raises(IndexBuildError, match="would contain the wheel directory"):
        build_site(tmp_path / "wheels", tmp_path)


def test_builds_into_an_empty_existing_directory(wheels: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    build_site(wheels, tmp_path / "empty")
    assert (tmp_path / "empty" / "simple" / "index.html").is_file()


# -- incremental rebuilds -----------------------------------------------------------


class Counter:
    """The wheels whose members were read, and the files read whole (to be hashed)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[str] = []
        self.hashed: list[str] = []
        real_hash = distfiles.sha256_file
        counter = self

        real_members = distfiles.wheel_members

        def counting_members(
            path: Path, size: int, filename: WheelFilename
        ) -> tuple[bytes | None, bytes, bytes | None]:
            counter.opened.append(path.name)
            return real_members(path, size, filename)

        def counting_hash(path: Path) -> str:
            self.hashed.append(path.name)
            return real_hash(path)

        def counting_read(path: Path, size: int) -> bytes | None:
            self.hashed.append(path.name)
            return read_regular_exactly(path, size)

        monkeypatch.setattr(distfiles, "wheel_members", counting_members)
        monkeypatch.setattr(distfiles, "sha256_file", counting_hash)
        monkeypatch.setattr(distfiles, "read_regular_exactly", counting_read)

    def reset(self) -> None:
        self.opened.clear()
        self.hashed.clear()


def test_rebuild_reads_only_new_wheels(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = Counter(monkeypatch)
    site = tmp_path / "site"
    first = build_site(wheels, site)
    assert len(counter.opened) == 6  # the wheels; sdists are never opened
    assert first.read == 7

    counter.reset()
    unchanged = build_site(wheels, site)
    assert counter.opened == []
    assert counter.hashed == []
    assert (unchanged.read, unchanged.unchanged) == (0, 7)

    counter.reset()
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any.whl")
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES)
    report = build_site(wheels, site)
    assert sorted(counter.opened) == [
        "demo_pkg-3.0-py3-none-any-x86_64_v1.whl",
        "demo_pkg-3.0-py3-none-any.whl",
    ]
    assert sorted(counter.hashed) == sorted(counter.opened)
    assert (report.read, report.unchanged) == (2, 7)
    anchors = parse_anchors((site / "simple/demo-pkg/index.html").read_bytes())
    assert "demo_pkg-3.0-variants.json" in anchors
    # The unchanged files are the old site's, hard-linked (or copied), not re-read.
    assert (site / "files/demo-pkg/demo_pkg-1.0-py3-none-any.whl.metadata").is_file()


def test_rebuild_rereads_a_rewritten_wheel(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    build_site(wheels, site)
    counter = Counter(monkeypatch)
    path = wheels / "demo_pkg-1.0-py3-none-any.whl"
    demo_wheel(wheels, path.name, requires_python=">=3.11")
    build_site(wheels, site)
    assert counter.opened == [path.name]
    anchors = parse_anchors((site / "simple/demo-pkg/index.html").read_bytes())
    attrs = anchors[path.name]
    assert attrs["data-requires-python"] == ">=3.11"
    assert attrs["href"] is not None
    assert attrs["href"].endswith(f"#sha256={sha256(path)}")
    assert (site / "files/demo-pkg" / path.name).read_bytes() == path.read_bytes()


def test_rebuild_recovers_a_lost_metadata_file(
    wheels: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metadata = site / "files/demo-pkg/demo_pkg-1.0-py3-none-any.whl.metadata"
    expected = metadata.read_bytes()
    metadata.unlink()
    counter = Counter(monkeypatch)
    build_site(wheels, site)
    assert counter.opened == ["demo_pkg-1.0-py3-none-any.whl"]
    assert metadata.read_bytes() == expected


def full_build(wheels: Path, tmp_path: Path) -> dict[str, bytes]:
    """The tree a build of *wheels* into a new site gives."""
    fresh = tmp_path / "fresh"
    build_site(wheels, fresh)
    return tree(fresh)


def test_added_and_removed_files_update_the_site_in_place(
    wheels: Path, site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other_page = site / "simple/other-project/index.html"
    before = other_page.stat()
    counter = Counter(monkeypatch)
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any.whl")
    demo_wheel(wheels, "demo_pkg-3.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES)
    demo_wheel(wheels, "new_project-1.0-py3-none-any.whl")
    (wheels / "demo_pkg-1.0.tar.gz").unlink()
    report = build_site(wheels, site)
    assert sorted(counter.opened) == [
        "demo_pkg-3.0-py3-none-any-x86_64_v1.whl",
        "demo_pkg-3.0-py3-none-any.whl",
        "new_project-1.0-py3-none-any.whl",
    ]
    assert (report.read, report.projects) == (3, 3)
    assert tree(site) == full_build(wheels, tmp_path)
    # A project nothing happened to keeps its page file: only changed pages are written.
    after = other_page.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(site.rglob(".*.tmp"))


def test_a_removed_project_leaves_no_trace(wheels: Path, site: Path, tmp_path: Path) -> None:
    (wheels / "Other_Project-0.1-py3-none-any.whl").unlink()
    build_site(wheels, site)
    assert not (site / "simple/other-project").exists()
    assert not (site / "files/other-project").exists()
    assert tree(site) == full_build(wheels, tmp_path)


def test_a_wheel_replaced_under_its_name_is_noticed(
    wheels: Path, site: Path, tmp_path: Path
) -> None:
    path = wheels / "Other_Project-0.1-py3-none-any.whl"
    old = path.read_bytes()
    replacement = tmp_path / "replacement"
    replacement.mkdir()
    # A replacement of the same size: only the bytes (and the mtime) tell them apart.
    for bound in range(5, 40):
        new = demo_wheel(replacement, path.name, requires_python=f"<{bound},>=3.9").read_bytes()
        if len(new) == len(old):
            break
    assert len(new) == len(old)
    assert new != old
    (replacement / path.name).replace(path)
    build_site(wheels, site)
    anchors = parse_anchors((site / "simple/other-project/index.html").read_bytes())
    assert str(anchors[path.name]["href"]).endswith(f"#sha256={sha256(path)}")
    assert (site / "files/other-project" / path.name).read_bytes() == new
    assert tree(site) == full_build(wheels, tmp_path)


def test_a_variant_added_to_a_release_rewrites_its_variants_file(
    wheels: Path, site: Path, tmp_path: Path
) -> None:
    demo_wheel(
        wheels,
        "demo_pkg-2.0-py3-none-any-x86_64_v2.whl",
        "x86_64_v2",
        {"x86_64": {"level": ["v2"]}},
    )
    build_site(wheels, site)
    merged = json.loads((site / "files/demo-pkg/demo_pkg-2.0-variants.json").read_bytes())
    assert "x86_64_v2" in merged["variants"]
    assert tree(site) == full_build(wheels, tmp_path)


def test_corrupt_state_means_a_full_rebuild(wheels: Path, site: Path) -> None:
    (site / STATE_FILE).write_text("{not json")
    report = build_site(wheels, site)
    assert report.read == 7
    assert json.loads((site / STATE_FILE).read_bytes())["format"] == STATE_FORMAT


def test_a_state_of_an_older_format_means_a_full_rebuild(wheels: Path, site: Path) -> None:
    """Format 1 states hold sdists read without their PKG-INFO: read them again."""
    state = json.loads((site / STATE_FILE).read_bytes())
    state["format"] = 1
    (site / STATE_FILE).write_text(json.dumps(state))
    assert build_site(wheels, site).read == 7


def test_site_is_world_readable(site: Path) -> None:
    assert site.stat().st_mode & 0o755 == 0o755


# -- the command --------------------------------------------------------------------


def test_cli_build(wheels: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["index", "build", str(wheels), "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "2 project(s), 7 file(s) (7 read, 0 unchanged), 2 variants.json file(s)" in result.stdout
    assert "skipped notes.tar.gz" in result.stderr


def test_cli_build_reports_inconsistency(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "pkg-1.0-py3-none-any-fast.whl", "fast", {"x86_64": {"level": ["v3"]}})
    demo_wheel(
        wheels, "pkg-1.0-py3-none-linux_x86_64-fast.whl", "fast", {"x86_64": {"level": ["v4"]}}
    )
    result = CliRunner().invoke(cli, ["index", "build", str(wheels), "-o", str(tmp_path / "s")])
    assert result.exit_code == 2
    assert result.stderr.startswith("wheelwise: error: cannot publish")
    assert "label 'fast'" in result.stderr
    assert result.stderr.count("\n") == 1  # one line, every problem on it
    assert "\\n" not in result.stderr


def test_unchanged_rebuild_reads_and_writes_nothing(
    wheels: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    counter = Counter(monkeypatch)
    report = build_site(wheels, site)
    assert counter.opened == []
    assert report.read == 0
    assert report.unchanged == report.files
    after = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    assert after == before  # the site was not rebuilt
    # Another base URL means other links: that is a rebuild.
    build_site(wheels, site, base_url="https://example.invalid/")
    assert b"https://example.invalid/" in (site / "simple/demo-pkg/index.html").read_bytes()


# -- files that are not what they say ----------------------------------------------------


def _outside(tmp_path: Path) -> Path:
    """A wheel and a real sdist outside the wheel directory."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    demo_wheel(elsewhere, "outer-1.0-py3-none-any.whl")
    demo_sdist(elsewhere, "outer-1.0.tar.gz")
    return elsewhere


UNSAFE: dict[str, tuple[str, Any, str]] = {
    "symlink-to-etc-passwd": ("evil-1.0.tar.gz", "/etc/passwd", "symbolic link"),
    "symlink-to-an-outside-sdist": (
        "outer-1.0.tar.gz",
        lambda tmp: tmp / "elsewhere/outer-1.0.tar.gz",
        "symbolic link",
    ),
    "symlink-to-an-outside-wheel": (
        "outer-1.0-py3-none-any.whl",
        lambda tmp: tmp / "elsewhere/outer-1.0-py3-none-any.whl",
        "symbolic link",
    ),
    "dangling-symlink": ("gone-1.0.tar.gz", "/nonexistent/gone-1.0.tar.gz", "symbolic link"),
    "not-gzip": ("evil-1.0.tar.gz", b"root:x:0:0:root:/root:/bin/bash\n", "not a gzip'd tar"),
    "gzip-not-tar": ("evil-1.0.tar.gz", "gzip", "not a gzip'd tar"),
    "other-top-folder": ("evil-1.0.tar.gz", {"other-1.0/PKG-INFO": b"x"}, "'evil-1.0/'"),
    "member-outside-top": (
        "evil-1.0.tar.gz",
        {"evil-1.0/PKG-INFO": b"x", "etc/passwd": b"x"},
        "'etc/passwd'",
    ),
    "dotdot-member": (
        "evil-1.0.tar.gz",
        {"evil-1.0/PKG-INFO": b"x", "evil-1.0/../../x": b"x"},
        "'evil-1.0/../../x'",
    ),
    "no-pkg-info": ("evil-1.0.tar.gz", {"evil-1.0/setup.py": b"x"}, "no evil-1.0/PKG-INFO"),
}


def make_unsafe(directory: Path, tmp_path: Path, case: str) -> str:
    """Put the *case* file into *directory*; its name."""
    import gzip

    filename, what, _ = UNSAFE[case]
    target = directory / filename
    if callable(what):
        _outside(tmp_path)
        target.symlink_to(what(tmp_path))
    elif isinstance(what, bytes):
        target.write_bytes(what)
    elif isinstance(what, dict):
        demo_sdist(directory, filename, what)
    elif what == "gzip":
        target.write_bytes(gzip.compress(b"plain text, not a tar archive\n" * 40))
    else:
        target.symlink_to(what)
    return filename


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_files_fail_the_build(wheels: Path, tmp_path: Path, case: str) -> None:
    filename = make_unsafe(wheels, tmp_path, case)
    site = tmp_path / "site"
    with pytest.raises(IndexBuildError) as info:
        build_site(wheels, site)
    assert filename in str(info.value)
    assert UNSAFE[case][2] in str(info.value)
    result = CliRunner().invoke(cli, ["index", "build", str(wheels), "-o", str(site)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("wheelwise: error: cannot publish")
    assert filename in result.stderr
    assert not site.exists()


def test_symlinks_inside_the_folder_are_followed(wheels: Path, tmp_path: Path) -> None:
    store = wheels / "store"
    demo_sdist(store, "inner-1.0.tar.gz")
    demo_wheel(store, "inner-1.0-py3-none-any.whl")
    (wheels / "inner-1.0.tar.gz").symlink_to(store / "inner-1.0.tar.gz")
    (wheels / "inner-1.0-py3-none-any.whl").symlink_to("store/inner-1.0-py3-none-any.whl")
    site = tmp_path / "site"
    build_site(wheels, site)
    for name in ("inner-1.0.tar.gz", "inner-1.0-py3-none-any.whl"):
        assert (site / "files/inner" / name).read_bytes() == (store / name).read_bytes()


def test_an_sdist_that_inflates_too_far_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wheelwise.publish import filecheck

    monkeypatch.setattr(filecheck, "SDIST_FLOOR_BYTES", 256 << 10)
    wheels = tmp_path / "wheels"
    demo_sdist(wheels, "bomb-1.0.tar.gz", {"bomb-1.0/PKG-INFO": b"x", "bomb-1.0/z": bytes(1 << 20)})
    with pytest.raises(
        IndexBuildError, match=r"bomb-1\.0\.tar\.gz: not a gzip'd tar archive .*bomb"
    ):
        build_site(wheels, tmp_path / "site")
