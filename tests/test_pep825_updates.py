"""PEP 825 as merged upstream after the copy in ``../shared/spec`` (python/peps#5100):
the link to a release's ``*-variants.json`` does not carry ``core-metadata``,
``requires-python`` or ``yanked``, and tools ignore them where an index gives them.

Cited as the project's record of the change (``../shared/README.md``): "the
``*-variants.json`` link must not carry ``core-metadata``, ``requires-python`` or
``yanked``, and tools ignore them".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from faultkit import fault_server, write_site
from indexkit import demo_wheel, parse_anchors, uvicorn_thread
from installkit import make_venv
from variantkit import install_with_system, installed_variant, level, variants_document, vpkg_wheel
from wheelwise.publish.server import create_app

NOT_ON_THE_LINK = ("core-metadata", "dist-info-metadata", "requires-python", "yanked")


def _release(folder: Path) -> Path:
    """A release whose wheels have Requires-Python and PEP 658 metadata files."""
    folder.mkdir(parents=True)
    level = {"x86_64": {"level": ["v3"]}}
    variant = "pkg-1.0-py3-none-any-x86_64_v3.whl"
    demo_wheel(folder, variant, "x86_64_v3", level, requires_python=">=3.8")
    demo_wheel(folder, "pkg-1.0-py3-none-any.whl", requires_python=">=3.8")
    return folder


def _check_links(json_page: dict[str, object], html_page: str) -> None:
    files = json_page["files"]
    assert isinstance(files, list)
    [variants] = [f for f in files if f["filename"] == "pkg-1.0-variants.json"]
    wheels = [f for f in files if f["filename"].endswith(".whl")]
    # The wheels carry them (so the test can fail), the variants.json link never.
    assert all("requires-python" in f and "core-metadata" in f for f in wheels)
    assert not set(NOT_ON_THE_LINK) & set(variants), variants
    anchors = parse_anchors(html_page)
    attributes = anchors["pkg-1.0-variants.json"]
    assert not {f"data-{key}" for key in NOT_ON_THE_LINK} & set(attributes), attributes
    assert "data-requires-python" in anchors["pkg-1.0-py3-none-any.whl"]


def test_index_build_puts_no_core_metadata_requires_python_or_yanked_on_the_link(
    tmp_path: Path,
) -> None:
    from variantkit import wheelwise

    wheels = _release(tmp_path / "wheels")
    result = wheelwise(
        ["index", "build", str(wheels), "-o", str(tmp_path / "site")], tmp_path / "c"
    )
    assert result.returncode == 0, result.stderr
    page = tmp_path / "site" / "simple" / "pkg"
    _check_links(json.loads((page / "index.json").read_text()), (page / "index.html").read_text())


def test_index_serve_puts_none_of_them_on_the_link(tmp_path: Path) -> None:
    import httpx

    wheels = _release(tmp_path / "wheels")
    with uvicorn_thread(create_app(wheels)) as base:
        url = f"{base}/simple/pkg/"
        as_json = httpx.get(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        as_html = httpx.get(url, headers={"Accept": "text/html"})
    _check_links(as_json.json(), as_html.text)


@pytest.mark.parametrize(
    "given",
    [
        {"yanked": True},
        {"yanked": "a reason"},
        {"requires-python": ">=99"},
        {"core-metadata": {"sha256": "0" * 64}},
        {"yanked": True, "requires-python": "<3", "core-metadata": True},
    ],
    ids=["yanked", "yanked-reason", "requires-python", "core-metadata", "all"],
)
def test_an_installer_ignores_them_on_the_link(tmp_path: Path, given: dict[str, object]) -> None:
    site = tmp_path / "site"
    write_site(site)
    page = site / "simple" / "vpkg" / "index.json"
    document = json.loads(page.read_text())
    for entry in document["files"]:
        if entry["filename"].endswith("-variants.json"):
            entry.update(given)
    page.write_text(json.dumps(document))
    python = make_venv(tmp_path / "venv")
    with fault_server(site) as server:
        code, _, err = install_with_system(
            tmp_path, python, f"{server.base}/simple/", "vpkg", levels=["v3"]
        )
    assert code == 0, err
    assert installed_variant(python) == "'v3'"


def _install_from_links(
    tmp_path: Path,
    variants: bytes | None,
    labels: Sequence[str] = ("v3", "v4"),
    levels: Sequence[str] = ("v4", "v3"),
) -> tuple[str, str]:
    """vpkg's wheels of *labels* (and *variants* as ``vpkg-1.0-variants.json``, if
    given) in a find-links folder, installed for a machine of *levels* with an empty
    index: (the installed variant, stderr)."""
    folder = tmp_path / "links"
    for label in labels:
        vpkg_wheel(folder, label=label, properties={} if label == "null" else None)
    if variants is not None:
        (folder / "vpkg-1.0-variants.json").write_bytes(variants)
    (tmp_path / "empty").mkdir()
    python = make_venv(tmp_path / "venv")
    code, _, err = install_with_system(
        tmp_path,
        python,
        str(tmp_path / "empty"),
        "--find-links",
        str(folder),
        "vpkg",
        levels=levels,
    )
    assert code == 0, err
    return installed_variant(python), err


@pytest.mark.parametrize("with_file", [True, False], ids=["variants-json", "wheels-only"])
def test_a_variants_json_in_a_find_links_folder_is_used(tmp_path: Path, with_file: bool) -> None:
    """python/peps#5100: a ``*-variants.json`` may also sit in a find-links folder (or
    another source that is not an index). Here the folder's file gives label v4 the
    property ``level :: v5``, which this v4 machine lacks, where the v4 wheel's own
    ``variant.json`` says ``v4``: read, the file makes the machine get v3; without
    it, v4."""
    document = variants_document({"v3": level("v3"), "v4": level("v5")})
    installed, _ = _install_from_links(tmp_path, document if with_file else None)
    assert installed == ("'v3'" if with_file else "'v4'")


def test_a_wheel_the_variants_json_does_not_list_is_incompatible_with_a_warning(
    tmp_path: Path,
) -> None:
    """PEP 825, "Suggested implementation logic": "If any of the labels present in
    wheel filenames are missing from it, assume that the respective wheels are
    incompatible." The file may lag behind a newly uploaded build (it "MAY be updated
    ... e.g. when adding a new variant"), so the v4 wheel here, which this v4 machine
    would prefer, is passed over for v3, and the output names the label and the file."""
    installed, err = _install_from_links(tmp_path, variants_document({"v3": level("v3")}))
    assert installed == "'v3'"
    [warning] = [line for line in err.splitlines() if "does not list" in line]
    assert "vpkg-1.0-variants.json" in warning, warning
    assert "'v4'" in warning, warning
    assert "incompatible" in warning


def test_a_null_wheel_the_variants_json_does_not_list_is_still_the_fallback(
    tmp_path: Path,
) -> None:
    """PEP 825 reserves ``null`` for the variant with zero properties, "a fallback
    variant that is always compatible": its meaning needs no listing. A machine
    that supports neither v3 nor v4 gets the null wheel, with no warning about it."""
    document = variants_document({"v3": level("v3"), "v4": level("v4")})
    installed, err = _install_from_links(
        tmp_path, document, labels=("v3", "v4", "null"), levels=("v2",)
    )
    assert installed == "'null'"
    assert "does not list" not in err, err
