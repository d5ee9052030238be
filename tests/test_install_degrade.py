"""``wheelwise install`` when a release's variant metadata is invalid or lies.

PEP 825 asks installers to degrade gracefully: an invalid ``*-variants.json``
(bad JSON, invalid against the schema, an unknown major version) is warned about
and the variant wheels' own ``variant.json`` are read instead; when those are
unusable too, the variant wheels count as incompatible (the non-variant wheel, or
another version, is installed). And a downloaded variant wheel must carry, for its
label, exactly the properties the index file claimed: otherwise nothing is
installed. Every case runs against a real HTTP server on 127.0.0.1 (or a local
index folder), into a fresh virtual environment.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from indexkit import http_server
from installkit import make_venv, site_packages, tree_hash
from variantkit import (
    install_with_system,
    installed_variant,
    level,
    variants_document,
    vpkg_wheel,
    wheelwise,
    write_site,
)
from wheelwise.fetch.download import DownloadItem, Fetched
from wheelwise.install import plan
from wheelwise.install.plan import InstallOptions, run_install
from wheelwise.models.errors import VariantMismatch
from wheelwise.resolve.lookahead import Lookahead
from wheelwise.variants.supported import SupportedProperties

GOOD = variants_document({"v3": level("v3"), "v4": level("v4")})
SCHEMA_V9 = "https://variants-schema.wheelnext.dev/peps/825/v9.0.0.json"
INVALID = {
    "garbage": (b"{this is not json", "invalid JSON"),
    "schema-invalid": (
        json.dumps({"variants": {"v3": level("v3")}}).encode(),
        "missing required key 'default-priorities'",
    ),
    "unknown-major": (
        json.dumps(
            {
                "$schema": SCHEMA_V9,
                "default-priorities": {"namespace": ["x86_64"]},
                "variants": {"v3": level("v3")},
            }
        ).encode(),
        "unsupported variant metadata schema version 9.0.0",
    ),
}
# This machine: x86-64-v3, so the v3 build fits and v4 does not.
V3_MACHINE = ["v3", "v2", "v1"]


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("wheelwise: warning: ")]


def install_cli(tmp_path: Path, python: Path, index: str, *args: str) -> tuple[int, str, str]:
    return install_with_system(tmp_path, python, index, *args, levels=V3_MACHINE)


# -- an invalid index file ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_index_file_falls_back_to_the_wheels_variant_json(
    case: str, tmp_path: Path
) -> None:
    document, problem = INVALID[case]
    wheels = [
        vpkg_wheel(tmp_path / "w"),
        *(vpkg_wheel(tmp_path / "w", label=v) for v in ("v3", "v4")),
    ]
    site = write_site(tmp_path / "site", wheels, {"1.0": document})
    python = make_venv(tmp_path / "venv")
    with http_server(site) as base:
        code, out, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 0, err
    assert installed_variant(python) == "'v3'"
    assert "installed vpkg 1.0 (variant v3, won by x86_64 :: level :: v3" in out
    [warning] = warnings_in(err)
    assert f"{base}/files/vpkg-1.0-variants.json" in warning
    assert problem in warning
    assert "reading each variant wheel's own variant.json instead" in warning


def test_dry_run_after_an_invalid_index_file_shows_the_wheels_properties(
    tmp_path: Path,
) -> None:
    wheels = [vpkg_wheel(tmp_path / "w", label=v) for v in ("v3", "v4")]
    # The wheels say v3 needs x86-64-v3 and AVX2 on; the broken index file cannot
    # say otherwise.
    wheels[0] = vpkg_wheel(
        tmp_path / "w", label="v3", properties={"x86_64": {"level": ["v3"], "avx2": ["on"]}}
    )
    site = write_site(tmp_path / "site", wheels, {"1.0": INVALID["garbage"][0]})
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    system = tmp_path / "machine.json"
    system.write_text(json.dumps({"x86_64": {"level": V3_MACHINE, "avx2": ["on"]}}))
    with http_server(site) as base:
        result = wheelwise(
            [
                "install",
                "--python",
                str(python),
                "--index-url",
                f"{base}/simple/",
                "--system",
                str(system),
                "--dry-run",
                "--report",
                "-",
                "vpkg",
            ],
            tmp_path / "cache",
        )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    [item] = report["install"]
    assert item["variant"] == {
        "label": "v3",
        "properties": ["x86_64 :: avx2 :: on", "x86_64 :: level :: v3"],
    }
    assert len(warnings_in(result.stderr)) == 1
    assert tree_hash(site_packages(python)) == before


def test_unusable_metadata_everywhere_installs_the_non_variant_wheel(tmp_path: Path) -> None:
    wheels = [
        vpkg_wheel(tmp_path / "w"),
        vpkg_wheel(tmp_path / "w", label="v3", variant_json=b"[broken"),
        vpkg_wheel(tmp_path / "w", label="v4", omit_variant_json=True),
    ]
    site = write_site(tmp_path / "site", wheels, {"1.0": INVALID["garbage"][0]})
    python = make_venv(tmp_path / "venv")
    with http_server(site) as base:
        code, out, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 0, err
    assert installed_variant(python) == "None"
    assert "installed vpkg 1.0\n" in out  # non-variant: nothing more to say without -v
    index_file, v3, v4, last = warnings_in(err)
    assert f"{base}/files/vpkg-1.0-variants.json" in index_file
    assert "vpkg-1.0-py3-none-any-v3.whl" in v3
    assert "the variant 'v3' of vpkg 1.0 is treated as incompatible" in v3
    assert f"{base}/files/vpkg-1.0-py3-none-any-v4.whl: variant wheel (label 'v4')" in v4
    assert "has no *.dist-info/variant.json" in v4
    assert last.endswith(
        "vpkg 1.0: no variant wheel has a usable variant.json: its variant wheels are "
        "treated as incompatible, and only a non-variant wheel can be installed"
    )


@pytest.mark.slow
def test_without_a_non_variant_wheel_the_release_is_unavailable(tmp_path: Path) -> None:
    broken = vpkg_wheel(tmp_path / "w", label="v3", variant_json=b"[broken")
    older = vpkg_wheel(tmp_path / "w", version="0.9")
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    # Only 1.0, all of whose metadata is unusable: nothing can be installed.
    site = write_site(tmp_path / "site", [broken], {"1.0": INVALID["garbage"][0]})
    with http_server(site) as base:
        code, _, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 2
    # One error line (after the warnings), and no escaped line break in it.
    [line] = [line for line in err.splitlines() if line.startswith("wheelwise: error: ")]
    assert line.startswith("wheelwise: error: no compatible wheel for vpkg")
    assert "\\n" not in line
    assert (
        "vpkg 1.0: variant wheels (v3) but no usable variant metadata: no variant wheel has "
        "a usable variant.json for the release"
    ) in err
    assert tree_hash(site_packages(python)) == before
    # With an older release, the resolver takes that one instead.
    site = write_site(tmp_path / "site2", [broken, older], {"1.0": INVALID["garbage"][0]})
    with http_server(site) as base:
        code, out, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 0, err
    assert "installed vpkg 0.9\n" in out
    assert len(warnings_in(err)) == 3


# -- an index file that lies about a wheel -----------------------------------------


def lying_wheels(directory: Path, lie: str) -> list[Path]:
    """A plain wheel, v4, and the v3 wheel the index file misdescribes."""
    if lie == "other-properties":
        liar = vpkg_wheel(directory, label="v3", properties=level("v4"))
    elif lie == "no-variant-json":
        liar = vpkg_wheel(directory, label="v3", omit_variant_json=True)
    else:
        liar = vpkg_wheel(
            directory,
            label="v3",
            variant_json=json.dumps(
                {
                    "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
                    "default-priorities": {"namespace": ["x86_64"]},
                    "variants": {"other": level("v3")},
                }
            ).encode(),
        )
    return [vpkg_wheel(directory), liar, vpkg_wheel(directory, label="v4")]


LIES = {
    "other-properties": (
        "its variant.json disagrees with {index} about label 'v3': only in {index}: "
        "x86_64 :: level :: v3; only in the wheel: x86_64 :: level :: v4"
    ),
    "no-variant-json": (
        "a variant wheel (label 'v3') without *.dist-info/variant.json, but {index} lists "
        "x86_64 :: level :: v3 for it"
    ),
    "other-label": (
        "its variant.json has no entry for its label 'v3' (it has 'other'), but {index} "
        "lists x86_64 :: level :: v3 for it"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("lie", list(LIES))
def test_lying_index_over_http_is_refused_and_nothing_changes(lie: str, tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", lying_wheels(tmp_path / "w", lie), {"1.0": GOOD})
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    with http_server(site) as base:
        code, out, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 2
    index = f"{base}/files/vpkg-1.0-variants.json"
    [line] = err.strip().splitlines()
    assert line.startswith("wheelwise: error: vpkg-1.0-py3-none-any-v3.whl: ")
    assert LIES[lie].format(index=index) in line
    assert "refusing to install it (nothing was installed)" in line
    assert out == ""
    assert tree_hash(site_packages(python)) == before
    assert installed_variant(python) == "missing"


def test_lying_local_index_is_refused(tmp_path: Path) -> None:
    """A local index folder: the wheel is copied, never downloaded early."""
    site = write_site(
        tmp_path / "site", lying_wheels(tmp_path / "w", "other-properties"), {"1.0": GOOD}
    )
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    code, _, err = install_cli(tmp_path, python, str(site / "simple"), "vpkg")
    assert code == 2
    assert "vpkg-1.0-py3-none-any-v3.whl: its variant.json disagrees with " in err
    assert "vpkg-1.0-variants.json" in err
    assert tree_hash(site_packages(python)) == before


PATHS = {
    # A small wheel over HTTP: fetched into memory while the resolver goes on.
    "downloaded-early": (True, True),
    # Nothing kept in memory: fetched onto disk once resolution is over.
    "downloaded-after": (True, False),
    # No PEP 658 metadata: the wheel is fetched while resolving, for its METADATA.
    "fetched-for-metadata": (False, True),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_download_path_is_checked(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    core_metadata, in_memory = PATHS[path]
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "*")
    if not in_memory:
        monkeypatch.setattr(plan, "IN_MEMORY_DOWNLOADS", 0)
    taken: list[str] = []
    take = Lookahead.take

    def spy(self: Lookahead, item: DownloadItem) -> Fetched | None:
        found = take(self, item)
        if found is not None:
            taken.append(found.name)
        return found

    # What the decide stage hands the fetch stage, fetched already.
    monkeypatch.setattr(Lookahead, "take", spy)
    site = write_site(
        tmp_path / "site",
        lying_wheels(tmp_path / "w", "other-properties"),
        {"1.0": GOOD},
        core_metadata=core_metadata,
    )
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    warnings: list[str] = []
    options = InstallOptions(
        requirements=["vpkg"],
        python=python,
        system=SupportedProperties.from_dict({"x86_64": {"level": V3_MACHINE}}),
        warn=warnings.append,
    )
    with http_server(site) as base, pytest.raises(VariantMismatch) as raised:
        run_install(replace(options, index_url=f"{base}/simple/"))
    assert str(raised.value).startswith("vpkg-1.0-py3-none-any-v3.whl: its variant.json")
    assert f"{base}/files/vpkg-1.0-variants.json" in str(raised.value)
    ahead = path != "downloaded-after"
    assert taken == (["vpkg-1.0-py3-none-any-v3.whl"] if ahead else [])
    assert warnings == []
    assert tree_hash(site_packages(python)) == before


def test_consistent_index_installs_and_warns_nothing(tmp_path: Path) -> None:
    wheels = [
        vpkg_wheel(tmp_path / "w"),
        *(vpkg_wheel(tmp_path / "w", label=v) for v in ("v3", "v4")),
    ]
    site = write_site(tmp_path / "site", wheels, {"1.0": GOOD})
    python = make_venv(tmp_path / "venv")
    with http_server(site) as base:
        code, out, err = install_cli(tmp_path, python, f"{base}/simple/", "vpkg")
    assert code == 0, err
    assert warnings_in(err) == []
    assert installed_variant(python) == "'v3'"
    assert "installed vpkg 1.0 (variant v3" in out
