"""A small PEP 517 build backend, ``tinybuild``, published as a wheel, and projects
that build with it: source trees, sdists and git repositories, all offline.

A project holds ``tinybuild.json`` (name, version, dependencies, and optionally
``built_against``: a module of a build requirement whose ``VARIANT`` the build
writes into the built package as ``BUILT_AGAINST``, to show which build of that
requirement the build environment had, and ``metadata``: a core metadata text the
built wheel carries as its METADATA, verbatim, instead of one made of name, version
and dependencies) and its package under ``src/``.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

from installkit import WHEEL
from wheelfactory import make_wheel

BACKEND = r"""
import base64, hashlib, json, os, zipfile

def _config():
    with open("tinybuild.json", encoding="utf-8") as f:
        return json.load(f)

def _metadata(c):
    if c.get("metadata") is not None:
        return c["metadata"].encode()
    lines = ["Metadata-Version: 2.1", "Name: " + c["name"], "Version: " + c["version"]]
    lines += ["Requires-Dist: " + d for d in c.get("dependencies", [])]
    return ("\n".join(lines) + "\n").encode()

def _write(directory, c, files):
    norm = c["name"].replace("-", "_")
    dist_info = "%s-%s.dist-info" % (norm, c["version"])
    files = dict(files)
    files[dist_info + "/METADATA"] = _metadata(c)
    files[dist_info + "/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tinybuild\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    rows = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    rows.append(dist_info + "/RECORD,,")
    files[dist_info + "/RECORD"] = ("\n".join(rows) + "\n").encode()
    filename = "%s-%s-py3-none-any.whl" % (norm, c["version"])
    with zipfile.ZipFile(os.path.join(directory, filename), "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return filename

def get_requires_for_build_wheel(config_settings=None):
    return _config().get("build_requires", [])

def get_requires_for_build_editable(config_settings=None):
    return _config().get("build_requires", [])

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    c = _config()
    if c.get("fail"):
        raise RuntimeError("tinybuild: this project is set to fail")
    files = {}
    for root, _, names in os.walk("src"):
        for n in names:
            path = os.path.join(root, n)
            with open(path, "rb") as f:
                files[os.path.relpath(path, "src").replace(os.sep, "/")] = f.read()
    if config_settings:
        package = c["name"].replace("-", "_")
        files[package + "/_config.py"] = ("CONFIG = %r\n" % (dict(config_settings),)).encode()
    against = c.get("built_against")
    if against:
        module = __import__(against)
        package = c["name"].replace("-", "_")
        files[package + "/_built.py"] = ("BUILT_AGAINST = %r\n" % module.VARIANT).encode()
    return _write(wheel_directory, c, files)

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    c = _config()
    norm = c["name"].replace("-", "_")
    pth = (os.path.abspath("src") + "\n").encode()
    return _write(wheel_directory, c, {"__editable__.%s.pth" % norm: pth})
"""


def backend_wheel(folder: Path, version: str = "1.0") -> Path:
    """``tinybuild`` as a wheel in *folder*."""
    folder.mkdir(parents=True, exist_ok=True)
    members = {
        "tinybuild/__init__.py": BACKEND.encode(),
        f"tinybuild-{version}.dist-info/WHEEL": WHEEL,
    }
    return make_wheel(
        folder, f"tinybuild-{version}-py3-none-any.whl", extra_members=members, record=True
    )


def project(
    folder: Path,
    name: str,
    version: str,
    *,
    dependencies: list[str] | None = None,
    build_requires: list[str] | None = None,
    built_against: str | None = None,
    requires: list[str] | None = None,
    fail: bool = False,
    code: str | None = None,
) -> Path:
    """A project folder *folder* built by tinybuild (a build requirement of its own,
    with *requires* beside it), whose package says ``VERSION``."""
    folder.mkdir(parents=True, exist_ok=True)
    build_system = {
        "requires": ["tinybuild", *(requires or [])],
        "build-backend": "tinybuild",
    }
    (folder / "pyproject.toml").write_text(
        "[build-system]\n"
        f"requires = {json.dumps(build_system['requires'])}\n"
        f'build-backend = "{build_system["build-backend"]}"\n'
    )
    config = {
        "name": name,
        "version": version,
        "dependencies": dependencies or [],
        "build_requires": build_requires or [],
        "fail": fail,
    }
    if built_against:
        config["built_against"] = built_against
    (folder / "tinybuild.json").write_text(json.dumps(config))
    package = folder / "src" / name.replace("-", "_")
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(code or f"VERSION = {version!r}\n")
    return folder


def sdist(tree: Path, out: Path, name: str, version: str, *, pkg_info: str = "") -> Path:
    """*tree* as ``{name}-{version}.tar.gz`` in *out*, with a PKG-INFO (*pkg_info*:
    more of its header lines, each ending in a newline)."""
    out.mkdir(parents=True, exist_ok=True)
    top = f"{name.replace('-', '_')}-{version}"
    path = out / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for file in sorted(tree.rglob("*")):
            if file.is_file():
                tar.add(file, arcname=f"{top}/{file.relative_to(tree).as_posix()}")
        info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{pkg_info}".encode()
        member = tarfile.TarInfo(f"{top}/PKG-INFO")
        member.size = len(info)
        tar.addfile(member, io.BytesIO(info))
    return path


def git_repository(tree: Path) -> str:
    """*tree* made a git repository with one commit, tagged ``v1``; its commit id."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=tree,
            check=True,
            capture_output=True,
            text=True,
            env={
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@example.org",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@example.org",
                "HOME": str(tree),
                "PATH": "/usr/bin:/bin",
            },
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "first")
    git("tag", "v1")
    return git("rev-parse", "HEAD")
