"""Build small wheel files for tests (real zip archives, written to disk)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wheelwise.wheels.record import file_entry, write_record


def make_wheel(
    directory: Path,
    filename: str,
    variant_json: Mapping[str, Any] | bytes | None = None,
    *,
    extra_members: Mapping[str, bytes] | None = None,
    record: bool = False,
    requires_python: str | None = None,
    requires_dist: Sequence[str] = (),
) -> Path:
    """Write *filename* into *directory* with a minimal dist-info.

    *variant_json* is a document (serialized as JSON) or raw bytes for
    ``{name}-{version}.dist-info/variant.json``; None leaves it out. With *record*,
    RECORD lists every member with its hash and size (else it is empty).
    *requires_python* adds a ``Requires-Python`` field to METADATA, and each of
    *requires_dist* a ``Requires-Dist`` field.
    """
    name, version = filename.split("-")[:2]
    dist_info = f"{name}-{version}.dist-info"
    members: dict[str, bytes] = {
        f"{name}/__init__.py": b"",
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + (f"Requires-Python: {requires_python}\n" if requires_python else "")
            + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires_dist)
        ).encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n",
    }
    if variant_json is not None:
        data = (
            variant_json if isinstance(variant_json, bytes) else json.dumps(variant_json).encode()
        )
        members[f"{dist_info}/variant.json"] = data
    members.update(extra_members or {})
    record_name = f"{dist_info}/RECORD"
    members[record_name] = (
        write_record([file_entry(n, d) for n, d in members.items()], record_path=record_name)
        if record
        else b""
    )
    path = directory / filename
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def variant_doc(label: str, properties: Mapping[str, Mapping[str, list[str]]]) -> dict[str, Any]:
    """A PEP 825 variant.json document for one label."""
    namespaces = sorted(properties) or ["x86_64"]
    return {
        "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": namespaces},
        "variants": {label: {ns: dict(f) for ns, f in properties.items()}},
    }
