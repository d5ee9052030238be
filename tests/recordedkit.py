"""A replay of the recorded part of PyPI (``data/recorded/index.json.gz``, written by
``tools/record_index.py``): stand-in files carrying the real core metadata, as a static
index served on 127.0.0.1, for the differential tests against pip and uv.

Each recorded wheel becomes a tiny wheel of the same filename whose METADATA is the
recorded one; each recorded sdist becomes a tiny sdist of the same filename (a ``.zip``
one is written as ``.tar.gz``) built by the ``tinybuild`` test backend, whose built
wheel carries the recorded METADATA verbatim. ``tinybuild`` itself is published beside
them: it is the only build requirement of the stand-in sdists.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

from buildkit import backend_wheel
from installkit import WHEEL
from paths import DATA
from wheelfactory import make_wheel
from wheelwise.publish.static import build_site

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

RECORDED = DATA / "recorded"
INDEX = RECORDED / "index.json.gz"
SETS = RECORDED / "sets.toml"
DIFFERENCES = RECORDED / "differences.toml"


def load_index(path: Path = INDEX) -> dict[str, dict[str, dict[str, Any]]]:
    """project -> version -> {files, requires_python, metadata}."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        document = json.load(stream)
    if document.get("format") != 1:
        raise ValueError(f"{path}: unknown format {document.get('format')!r}")
    projects: dict[str, dict[str, dict[str, Any]]] = document["projects"]
    return projects


def load_sets(path: Path = SETS) -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = tomllib.loads(path.read_text(encoding="utf-8"))["set"]
    return sets


def load_differences(path: Path = DIFFERENCES) -> list[dict[str, Any]]:
    differences: list[dict[str, Any]] = tomllib.loads(path.read_text(encoding="utf-8")).get(
        "difference", []
    )
    return differences


def _field(metadata: str, name: str) -> str | None:
    match = re.search(rf"^{name}:[ \t]*(.*?)[ \t]*$", metadata, re.MULTILINE | re.IGNORECASE)
    return match.group(1) if match else None


def _with_requires_python(metadata: str, requires_python: str | None) -> str:
    """*metadata*, with the Requires-Python the index page gave where it has none."""
    if requires_python and _field(metadata, "Requires-Python") is None:
        return metadata.rstrip("\n") + f"\nRequires-Python: {requires_python}\n"
    return metadata


def stand_in_wheel(folder: Path, filename: str, metadata: str) -> Path:
    """A wheel named *filename* whose METADATA is *metadata*, and nothing else of note."""
    name, version = filename.split("-")[:2]
    dist_info = f"{name}-{version}.dist-info"
    members = {f"{dist_info}/METADATA": metadata.encode(), f"{dist_info}/WHEEL": WHEEL}
    return make_wheel(folder, filename, extra_members=members)


def stand_in_sdist(folder: Path, filename: str, metadata: str) -> Path:
    """An sdist named *filename* (``.tar.gz``) built by tinybuild into a wheel whose
    METADATA is *metadata*."""
    top = filename.removesuffix(".tar.gz")
    name = _field(metadata, "Name") or top.rpartition("-")[0]
    version = _field(metadata, "Version") or top.rpartition("-")[2]
    config = {
        "name": re.sub(r"[-_.]+", "_", name),
        "version": version,
        "metadata": metadata,
    }
    members = {
        "pyproject.toml": (
            b'[build-system]\nrequires = ["tinybuild"]\nbuild-backend = "tinybuild"\n'
        ),
        "tinybuild.json": json.dumps(config).encode(),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
    }
    path = folder / filename
    with tarfile.open(path, "w:gz") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(f"{top}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def stand_in_folder(folder: Path, projects: dict[str, dict[str, dict[str, Any]]]) -> int:
    """Write the stand-in files of every recorded release, and tinybuild, into
    *folder*; how many files were written."""
    folder.mkdir(parents=True, exist_ok=True)
    backend_wheel(folder)
    count = 1
    for releases in projects.values():
        for release in releases.values():
            metadata = _with_requires_python(release["metadata"], release["requires_python"])
            files = release["files"]
            for filename in files:
                if filename.endswith(".whl"):
                    stand_in_wheel(folder, filename, metadata)
                else:
                    target = filename.removesuffix(".zip").removesuffix(".tar.gz") + ".tar.gz"
                    if target != filename and target in files:
                        continue
                    stand_in_sdist(folder, target, metadata)
                count += 1
    return count


def replay_site(work: Path) -> Path:
    """The static index of the recorded releases, built under *work*; its site folder."""
    files = work / "files"
    stand_in_folder(files, load_index())
    site = work / "site"
    build_site(files, site)
    return site
