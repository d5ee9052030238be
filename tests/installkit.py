"""Helpers for the install tests: throwaway virtual environments, wheels, tree hashes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from wheelfactory import make_wheel, variant_doc

LOCK_NAME = ".wheelwise.lock"
# With a Tag line: `pip check` refuses distributions whose WHEEL names no tag.
WHEEL = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def make_venv(path: Path) -> Path:
    """A fresh virtual environment at *path* (no pip in it); its Python executable."""
    subprocess.run(
        [sys.executable, "-m", "uv", "venv", str(path), "--python", sys.executable, "-q"],
        check=True,
        capture_output=True,
        env={**os.environ, "UV_NO_CONFIG": "1", "UV_OFFLINE": "1"},
    )
    return path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def run_python(
    python: Path, code: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run *code* in *python*, writing bytecode as a normal run would, with *env*
    added to this process's environment."""
    full = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**full, **(env or {})},
    )


def imported_from(python: Path, module: str, userbase: Path) -> str:
    """Where *python* imports *module* from, with the user base *userbase*."""
    ran = run_python(
        python, f"import {module}; print({module}.__file__)", {"PYTHONUSERBASE": str(userbase)}
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def site_packages(python: Path) -> Path:
    """The site-packages folder of *python*'s environment."""
    found = list((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert len(found) == 1, found
    return found[0]


def installed_build(python: Path, module: str) -> str:
    """``repr(VARIANT)`` of *module*, imported in *python*'s environment: which build
    of a test wheel is installed there."""
    result = run_python(python, f"import {module}; print(repr({module}.VARIANT))")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Our pip, acting on the target interpreter (``pip --python``)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "--disable-pip-version-check",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PIP_NO_INPUT": "1"},
    )


def alpha_wheel(directory: Path, version: str, *, label: str | None = None) -> Path:
    """``alpha``: a module, a console script ``alpha-cli`` and a data file.

    Version 1.0 has a module ``alpha/old_only.py`` later versions lack; with *label*
    the wheel is a variant wheel carrying ``variant.json``.
    """
    dist_info = f"alpha-{version}.dist-info"
    members = {
        "alpha/__init__.py": (
            f"VERSION = {version!r}\n\ndef main():\n    print('alpha', VERSION)\n"
        ).encode(),
        f"{dist_info}/entry_points.txt": b"[console_scripts]\nalpha-cli = alpha:main\n",
        f"alpha-{version}.data/data/share/alpha/readme.txt": f"alpha {version}\n".encode(),
    }
    members[f"{dist_info}/WHEEL"] = WHEEL
    if version == "1.0":
        members["alpha/old_only.py"] = b"OLD = True\n"
    directory.mkdir(parents=True, exist_ok=True)
    name = f"alpha-{version}-py3-none-any{'-' + label if label else ''}.whl"
    doc = variant_doc(label, {"x86_64": {"level": ["v3"]}}) if label else None
    return make_wheel(directory, name, doc, extra_members=members, record=True)


def simple_wheel(directory: Path, name: str, version: str, *, record: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    members = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": WHEEL,
    }
    return make_wheel(
        directory, f"{name}-{version}-py3-none-any.whl", extra_members=members, record=record
    )


def nvidia_wheel(directory: Path, name: str, version: str, init: bytes = b"") -> Path:
    """*name* (``nvidia_cublas_cu12``...) shipping ``nvidia/__init__.py`` (*init*:
    empty in every CUDA 12 wheel) and its own ``nvidia/cublas/__init__.py``."""
    directory.mkdir(parents=True, exist_ok=True)
    short = name.split("_")[1]
    members = {
        "nvidia/__init__.py": init,
        f"nvidia/{short}/__init__.py": f"NAME = {short!r}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": WHEEL,
    }
    return make_wheel(
        directory, f"{name}-{version}-py3-none-any.whl", extra_members=members, record=True
    )


def tampered_wheel(directory: Path, name: str, version: str) -> Path:
    """*name*'s :func:`simple_wheel` with its module changed after its RECORD was
    written: installing it fails as that member is written."""
    original = simple_wheel(directory / "original", name, version)
    tampered = directory / original.name
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(tampered, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            changed = info.filename == f"{name}/__init__.py"
            target.writestr(info.filename, data + b"# changed\n" if changed else data)
    return tampered


def tree_hash(root: Path) -> str:
    """A digest of every path, file content, symlink target and folder under *root*.

    The lock file is left out: taking the lock may create it.
    """
    digest = hashlib.sha256()
    for current, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(current, root)
        digest.update(f"D {rel}\n".encode())
        for name in sorted(files):
            if name == LOCK_NAME:
                continue
            path = os.path.join(current, name)
            digest.update(f"F {os.path.join(rel, name)}\n".encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            else:
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
        for name in dirs:
            path = os.path.join(current, name)
            if os.path.islink(path):
                digest.update(f"L {os.path.join(rel, name)} {os.readlink(path)}\n".encode())
    return digest.hexdigest()
