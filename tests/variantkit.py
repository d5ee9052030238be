"""A small variant release served as a simple index whose ``*-variants.json`` each
test writes itself (valid, garbage, or lying), and ``wheelwise install`` runs.

``vpkg`` has variant wheels labelled after the x86-64 level they need (``v3``,
``v4``) and, unless left out, a non-variant wheel; each wheel's module says which
build it is (``vpkg.VARIANT``). The machine is given with ``--system``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clikit import run_wheelwise
from installkit import WHEEL, run_python
from wheelfactory import make_wheel, variant_doc

PROJECT = "vpkg"
SCHEMA = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"


def level(value: str) -> dict[str, dict[str, list[str]]]:
    return {"x86_64": {"level": [value]}}


def vpkg_wheel(
    directory: Path,
    version: str = "1.0",
    label: str | None = None,
    properties: Mapping[str, Mapping[str, list[str]]] | None = None,
    *,
    variant_json: bytes | None = None,
    omit_variant_json: bool = False,
) -> Path:
    """A ``vpkg`` wheel; with *label*, a variant wheel whose ``variant.json`` gives
    *label* *properties* (default: the level named by the label), or is the raw
    *variant_json*, or is left out."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{PROJECT}-{version}.dist-info"
    members = {
        f"{PROJECT}/__init__.py": f"VARIANT = {label!r}\nVERSION = {version!r}\n".encode(),
        f"{dist_info}/WHEEL": WHEEL,
    }
    document: dict[str, Any] | bytes | None = None
    if label is not None and not omit_variant_json:
        document = (
            variant_json
            if variant_json is not None
            else variant_doc(label, properties if properties is not None else level(label))
        )
    suffix = f"-{label}" if label else ""
    return make_wheel(
        directory,
        f"{PROJECT}-{version}-py3-none-any{suffix}.whl",
        document,
        extra_members=members,
        record=True,
    )


def variants_document(variants: Mapping[str, Mapping[str, Mapping[str, list[str]]]]) -> bytes:
    """An index-level ``*-variants.json`` (PEP 825) giving each label its properties."""
    return json.dumps(
        {
            "$schema": SCHEMA,
            "default-priorities": {"namespace": ["x86_64"]},
            "variants": {label: dict(props) for label, props in variants.items()},
        }
    ).encode()


def write_site(
    site: Path,
    wheels: Sequence[Path],
    variants_json: Mapping[str, bytes],
    *,
    core_metadata: bool = True,
) -> Path:
    """A PEP 503 site: ``simple/vpkg/index.html`` listing *wheels* and, per version,
    the ``vpkg-{version}-variants.json`` given, each link with its sha256; with
    *core_metadata*, each wheel's METADATA is served too (PEP 658)."""
    files = site / "files"
    files.mkdir(parents=True, exist_ok=True)
    page = site / "simple" / PROJECT
    page.mkdir(parents=True, exist_ok=True)
    anchors = []
    listed: list[tuple[str, bytes]] = [(w.name, w.read_bytes()) for w in wheels]
    listed += [(f"{PROJECT}-{v}-variants.json", data) for v, data in variants_json.items()]
    for name, data in listed:
        (files / name).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        extra = ""
        if core_metadata and name.endswith(".whl"):
            with zipfile.ZipFile(files / name) as archive:
                metadata = next(
                    archive.read(n) for n in archive.namelist() if n.endswith(".dist-info/METADATA")
                )
            (files / f"{name}.metadata").write_bytes(metadata)
            extra = f' data-dist-info-metadata="sha256={hashlib.sha256(metadata).hexdigest()}"'
        anchors.append(f'<a href="../../files/{name}#sha256={digest}"{extra}>{name}</a><br>')
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
    )
    return site


def system_file(directory: Path, levels: Sequence[str]) -> Path:
    path = directory / "system.json"
    path.write_text(json.dumps({"system": {"x86_64": {"level": list(levels)}}}))
    return path


def wheelwise(
    args: Sequence[str],
    cache: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m wheelwise ARGS`` with its own cache and no proxy (in *cwd*)."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
    }
    full.update(WHEELWISE_CACHE_DIR=str(cache), NO_PROXY="*", COLUMNS="300", **(env or {}))
    return run_wheelwise(args, full, cwd=cwd, timeout=120)


def install_with_system(
    tmp_path: Path, python: Path, index: str, *args: str, levels: Sequence[str] = ("v4", "v3")
) -> tuple[int, str, str]:
    """``wheelwise install`` into *python* from *index* for an x86-64 machine of *levels*:
    (exit status, stdout, stderr)."""
    result = wheelwise(
        [
            "install",
            "--python",
            str(python),
            "--index-url",
            index,
            "--system",
            str(system_file(tmp_path, levels)),
            *args,
        ],
        tmp_path / "cache",
    )
    return result.returncode, result.stdout, result.stderr


def installed_variant(python: Path) -> str:
    """``repr(vpkg.VARIANT)`` in *python*, or ``missing`` when vpkg is not installed."""
    result = run_python(python, f"import {PROJECT}; print(repr({PROJECT}.VARIANT))")
    return result.stdout.strip() if result.returncode == 0 else "missing"
