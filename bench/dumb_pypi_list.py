"""What dumb-pypi leaves to its user: hash each wheel and publish its metadata file.

dumb-pypi renders pages from a package list (one JSON object per line: filename,
``hash``, ``requires_python``, ``core_metadata``) and never opens a wheel. This
script makes that list the plain way, with the standard library only (it runs in
dumb-pypi's virtual environment): for each wheel of WHEELS, a hard link (else a
copy) in PACKAGES, its sha256, its ``*.dist-info/METADATA`` written beside it as
``<wheel>.metadata`` and hashed, and Requires-Python from its header.

Usage::

    python bench/dumb_pypi_list.py WHEELS PACKAGES LIST
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path


def main(wheels: str, packages: str, listing: str) -> int:
    out_dir = Path(packages)
    out_dir.mkdir(parents=True, exist_ok=True)
    parser = email.parser.BytesHeaderParser()
    with Path(listing).open("w") as out:
        for source in sorted(Path(wheels).glob("*.whl")):
            target = out_dir / source.name
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
            data = source.read_bytes()
            with zipfile.ZipFile(source) as archive:
                member = next(
                    m
                    for m in archive.namelist()
                    if m.count("/") == 1 and m.endswith(".dist-info/METADATA")
                )
                metadata = archive.read(member)
            target.with_name(source.name + ".metadata").write_bytes(metadata)
            entry = {
                "filename": source.name,
                "hash": "sha256=" + hashlib.sha256(data).hexdigest(),
                "core_metadata": "sha256=" + hashlib.sha256(metadata).hexdigest(),
            }
            requires_python = parser.parsebytes(metadata).get("Requires-Python")
            if requires_python:
                entry["requires_python"] = requires_python
            out.write(json.dumps(entry) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
