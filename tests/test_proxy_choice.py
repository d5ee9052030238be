"""What the proxy lists for a project and a machine (``proxy.choice.decide``), with
in-memory listings: no server, no wheel files."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from wheelwise.client.index_client import IndexFile, IndexSource, ProjectListing
from wheelwise.proxy.choice import Omitted, Passthrough, ProjectView, Rewrite, decide
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

SCHEMA = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"
A = IndexSource.index("http://a.example/simple/")
B = IndexSource.index("http://b.example/simple/")
VARIANTS = {
    "v3": {"x86_64": {"level": ["v3"]}},
    "v4": {"x86_64": {"level": ["v4"]}},
}


def file(name: str, **kwargs: object) -> IndexFile:
    return IndexFile(filename=name, url=f"http://files.example/{name}", **kwargs)  # type: ignore[arg-type]


def variants_json(version: str = "1.0") -> IndexFile:
    return file(f"pkg-{version}-variants.json")


def metadata_for(found: IndexFile) -> VariantMetadata:
    document = {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": ["x86_64"]},
        "variants": VARIANTS,
    }
    return VariantMetadata.from_json(json.dumps(document).encode(), source=found.url)


def machine(*levels: str) -> SupportedProperties:
    return SupportedProperties.from_dict({"x86_64": {"level": list(levels)}})


def view(listings: Sequence[ProjectListing], supported: SupportedProperties) -> ProjectView:
    return decide(
        canonicalize_name("pkg"),
        listings,
        machine="the test machine",
        supported=lambda metadata: supported,
        metadata_for=metadata_for,
    )


def listing(source: IndexSource, *files: IndexFile) -> ProjectListing:
    return ProjectListing(canonicalize_name("pkg"), source, files, source.url)


RELEASE = (
    file("pkg-1.0-py3-none-any.whl"),
    file("pkg-1.0-py3-none-any-v3.whl", hashes={"sha256": "a" * 64}),
    file("pkg-1.0-py3-none-any-v4.whl", hashes={"sha256": "b" * 64}),
    variants_json(),
    file("pkg-1.0.tar.gz"),
)


@pytest.mark.parametrize(("levels", "label"), [(("v4", "v3"), "v4"), (("v3",), "v3")])
def test_the_best_variant_is_listed_under_the_plain_name(
    levels: tuple[str, ...], label: str
) -> None:
    entries = list(view([listing(A, *RELEASE)], machine(*levels)).entries())
    assert [e.filename for e in entries] == ["pkg-1.0.tar.gz", "pkg-1.0-py3-none-any.whl"]
    rewrite = entries[1]
    assert isinstance(rewrite, Rewrite)
    assert rewrite.label == label
    assert rewrite.source.filename == f"pkg-1.0-py3-none-any-{label}.whl"
    assert [str(p) for p in rewrite.properties] == [f"x86_64 :: level :: {label}"]
    assert f"variant {label} for the test machine" in rewrite.why


def test_the_plain_wheel_is_the_fallback_when_no_variant_fits() -> None:
    entries = list(view([listing(A, *RELEASE)], machine("v1")).entries())
    plain = [e for e in entries if e.filename.endswith(".whl")]
    assert len(plain) == 1
    assert isinstance(plain[0], Passthrough)
    assert plain[0].file is RELEASE[0]
    assert plain[0].why is not None
    assert "no variant fits" in plain[0].why


def test_a_tag_group_with_nothing_that_fits_is_left_out_with_why() -> None:
    only_variants = [f for f in RELEASE if f.filename != "pkg-1.0-py3-none-any.whl"]
    result = view([listing(A, *only_variants)], machine("v1"))
    (release,) = result.releases
    assert [e.filename for e in release.entries] == ["pkg-1.0.tar.gz"]
    (omitted,) = release.omitted
    assert isinstance(omitted, Omitted)
    assert omitted.filename == "pkg-1.0-py3-none-any.whl"
    assert "no build fits the test machine" in omitted.why


def test_variant_wheels_without_release_metadata_are_incompatible() -> None:
    no_json = [f for f in RELEASE if not f.filename.endswith("variants.json")]
    entries = list(view([listing(A, *no_json)], machine("v4", "v3")).entries())
    wheel = next(e for e in entries if e.filename.endswith(".whl"))
    assert isinstance(wheel, Passthrough)
    assert wheel.file is RELEASE[0]
    assert wheel.why is not None
    assert "no variant metadata" in wheel.why


def test_each_platform_tag_gets_its_own_choice() -> None:
    files = [
        file("pkg-1.0-cp311-cp311-linux_x86_64-v3.whl"),
        file("pkg-1.0-cp311-cp311-linux_x86_64-v4.whl"),
        file("pkg-1.0-cp312-cp312-linux_x86_64-v3.whl"),
        variants_json(),
    ]
    entries = list(view([listing(A, *files)], machine("v4", "v3")).entries())
    chosen = {e.filename: e.label for e in entries if isinstance(e, Rewrite)}
    assert chosen == {
        "pkg-1.0-cp311-cp311-linux_x86_64.whl": "v4",
        "pkg-1.0-cp312-cp312-linux_x86_64.whl": "v3",
    }


def test_releases_without_variants_pass_through_as_they_are() -> None:
    files = [file("pkg-2.0-py3-none-any.whl", yanked=True, yanked_reason="broken")]
    entries = list(view([listing(A, *files)], machine()).entries())
    assert entries == [Passthrough(files[0])]


def test_each_release_comes_from_the_first_upstream_that_lists_it() -> None:
    first = listing(A, file("pkg-1.0-py3-none-any.whl"))
    second = listing(
        B, file("pkg-1.0-py3-none-any-v3.whl"), variants_json(), file("pkg-2.0-py3-none-any.whl")
    )
    result = view([first, second], machine("v3"))
    assert [(str(r.version), r.upstream) for r in result.releases] == [
        ("1.0", A.url),
        ("2.0", B.url),
    ]
    # Nothing of B's 1.0 is mixed in: its variant wheel is not considered.
    assert all(isinstance(e, Passthrough) for e in result.releases[0].entries)
    assert result.versions == ["1.0", "2.0"]
    assert result.releases[0].version == Version("1.0")


def test_the_content_key_follows_the_upstream_bytes_and_marker_values() -> None:
    base = view([listing(A, *RELEASE)], machine("v4", "v3"))
    again = view([listing(A, *RELEASE)], machine("v4", "v3"))
    other_bytes = [
        file("pkg-1.0-py3-none-any-v4.whl", hashes={"sha256": "c" * 64})
        if "v4" in f.filename
        else f
        for f in RELEASE
    ]
    changed = view([listing(A, *other_bytes)], machine("v4", "v3"))

    def key(result: ProjectView) -> str:
        entry = result.find("pkg-1.0-py3-none-any.whl")
        assert isinstance(entry, Rewrite)
        return entry.key

    assert key(base) == key(again)
    assert key(base) != key(changed)
