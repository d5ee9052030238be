"""Build the demo wheelhouse of ``make demo`` from examples/demo-project.

Writes into WHEELHOUSE (its old ``*.whl`` files are removed first):

* ``wheelwise_demo-1.0-py3-none-any.whl``: the plain wheel, built here with the
  standard library (the package is two pure-Python modules), so that no build
  backend has to be installed; it is also the non-variant fallback that installers
  which know nothing of variants (pip, uv) pick;
* one variant wheel per label of ``VARIANTS``, made from the plain wheel by
  ``wheelwise variant make`` (``--pyproject`` gives the namespace priorities of the
  project's ``[variant]`` table; every property is validated against the built-in
  providers). With ``--pep517``, ``wheelwise build --no-isolation`` builds each
  variant through the project's own backend instead (hatchling must be installed).

Then, with ``--site SITE``, ``wheelwise index build`` publishes the wheelhouse as a
static index (``SITE/simple/``) with the merged
``SITE/files/wheelwise-demo/wheelwise_demo-1.0-variants.json``.

Usage (from the repository root)::

    .venv/bin/python examples/build_demo_wheelhouse.py WHEELHOUSE [--site SITE] [--pep517]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

PROJECT = Path(__file__).resolve().parent / "demo-project"
PACKAGE = "wheelwise_demo"

# label -> properties ("namespace :: feature :: value"); an empty list is the null variant.
VARIANTS: dict[str, list[str]] = {
    "null": [],
    "cu126": [
        "nvidia :: cuda_version_lower_bound :: 12.6",
        *(f"nvidia :: sm_arch :: {arch}_real" for arch in (50, 60, 70, 75, 80, 86, 90)),
    ],
    "cu128": [
        "nvidia :: cuda_version_lower_bound :: 12.8",
        *(f"nvidia :: sm_arch :: {arch}_real" for arch in (70, 75, 80, 86, 90, 100, 120)),
    ],
    "cu130": [
        "nvidia :: cuda_version_lower_bound :: 13.0",
        *(f"nvidia :: sm_arch :: {arch}_real" for arch in (75, 80, 86, 90, 100, 110, 120)),
        "nvidia :: sm_arch :: 120_virtual",
    ],
    "x86_64_v3": ["x86_64 :: level :: v3"],
}

# Fixed timestamp and mode: the same sources give a byte-identical wheel.
_DATE_TIME = (2020, 1, 1, 0, 0, 0)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def build_plain_wheel(project: Path, out: Path) -> Path:
    """The project's ``py3-none-any`` wheel, written directly (RECORD included)."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name: str = meta["name"]
    version: str = meta["version"]
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    members: dict[str, bytes] = {
        f"{PACKAGE}/{source.name}": source.read_bytes()
        for source in sorted((project / PACKAGE).glob("*.py"))
    }
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {meta['description']}",
        f"Requires-Python: {meta['requires-python']}",
    ]
    members[f"{info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    members[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: build_demo_wheelhouse.py\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    scripts = meta.get("scripts", {})
    if scripts:
        lines = ["[console_scripts]", *(f"{k} = {v}" for k, v in scripts.items())]
        members[f"{info}/entry_points.txt"] = ("\n".join(lines) + "\n").encode()
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in members.items()]
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    path = out / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            entry = zipfile.ZipInfo(member, _DATE_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return path


def wheelwise(*args: str) -> None:
    """Run one wheelwise command of this environment, showing it first."""
    print("$ wheelwise " + " ".join(f"'{a}'" if " " in a else a for a in args), flush=True)
    subprocess.run([sys.executable, "-m", "wheelwise", *args], check=True)


def variant_args(label: str, properties: list[str]) -> list[str]:
    if not properties:
        return ["--null"]
    return [*(arg for prop in properties for arg in ("-p", prop)), "--label", label]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the wheelwise-demo wheelhouse.")
    parser.add_argument("wheelhouse", type=Path, help="where the wheels go")
    parser.add_argument("--site", type=Path, help="also build a static index here")
    parser.add_argument(
        "--pep517",
        action="store_true",
        help="build the variants with `wheelwise build --no-isolation` (needs hatchling)",
    )
    args = parser.parse_args(argv)

    wheelhouse: Path = args.wheelhouse
    wheelhouse.mkdir(parents=True, exist_ok=True)
    for old in wheelhouse.glob("*.whl"):
        old.unlink()
    plain = build_plain_wheel(PROJECT, wheelhouse)
    print(f"wrote {plain} (the non-variant fallback)", flush=True)
    pyproject = str(PROJECT / "pyproject.toml")
    for label, properties in VARIANTS.items():
        if args.pep517:
            wheelwise(
                "build",
                str(PROJECT),
                "--no-isolation",
                *variant_args(label, properties),
                "-o",
                str(wheelhouse),
            )
        else:
            wheelwise(
                "variant",
                "make",
                str(plain),
                *variant_args(label, properties),
                "--pyproject",
                pyproject,
                "-o",
                str(wheelhouse),
            )
    if args.site is not None:
        wheelwise("index", "build", str(wheelhouse), "-o", str(args.site))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
