"""Run an install with the cache or the target on a small tmpfs, inside a user and
mount namespace (``unshare -rm``: no privileges needed), and report as JSON.

    [STREAM=1 | AHEAD=1] [PREINSTALL=NAME] \
        unshare -rm python fulldisk_driver.py WHERE WORK INDEX SIZE REQUIREMENT

WHERE: ``cache``, ``target`` (the venv) or ``target-folder``.

``target-folder``: the install goes to ``--target`` a folder on the tmpfs.

The tmpfs exists only inside the namespace, so everything that looks at it
happens here: the venv is made, hashed before and after, and the cache's
unpacked entries are checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from installkit import tree_hash
from wheelwise.cache.unpacked import UnpackedStore, verify_entry

where, work, index, size, requirement = sys.argv[1:6]
small = Path(work) / "small"
small.mkdir()
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(small)], check=True)
cache = (small if where == "cache" else Path(work)) / "cache"
venv = (small if where == "target" else Path(work)) / "venv"
subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
folder = small / "target" if where == "target-folder" else None
if folder is not None:
    folder.mkdir()
watched = folder or venv
env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")}
env |= {"WHEELWISE_CACHE_DIR": str(cache), "NO_PROXY": "*", "COLUMNS": "300"}
# PREINSTALL=NAME: NAME installed into the venv first (a file of it that the install
# replaces is set aside before the disk fills, and must be put back).
if os.environ.get("PREINSTALL"):
    first = [sys.executable, "-m", "wheelwise", "install", "-q", "--python"]
    first += [str(venv / "bin" / "python"), "--index-url", index, os.environ["PREINSTALL"]]
    done = subprocess.run(first, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
before = tree_hash(watched)
# STREAM=1: the wheel is unpacked into the cache as it downloads, as a big one is
# (nor does it fit the memory budget).
launcher = ["-m", "wheelwise"]
# AHEAD=1: it is unpacked into the cache by the background thread before the
# transaction (tests/aheadkit.py).
if os.environ.get("AHEAD") == "1":
    launcher = [
        "-c",
        f"import runpy, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import aheadkit; aheadkit.unpack_ahead_at_once(); "
        "sys.argv = ['wheelwise', *sys.argv[1:]]; "
        "runpy.run_module('wheelwise', run_name='__main__', alter_sys=True)",
    ]
if os.environ.get("STREAM") == "1":
    launcher = [
        "-c",
        "import runpy, sys, wheelwise.fetch.download as d, wheelwise.install.plan as p; "
        "d.STREAM_UNPACK_FROM = 0; p.IN_MEMORY_DOWNLOADS = 0; "
        "sys.argv = ['wheelwise', *sys.argv[1:]]; "
        "runpy.run_module('wheelwise', run_name='__main__', alter_sys=True)",
    ]
# HEAD_START=1: the cache warmed first by an install into another venv (off the
# tmpfs), then the wheel placed by a head start (tests/headstartdriver.py, its log
# in WORK/head-start.log).
if os.environ.get("HEAD_START") == "1":
    warm = Path(work) / "warm"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(warm)], check=True)
    warmed = subprocess.run(
        [
            sys.executable,
            "-m",
            "wheelwise",
            "install",
            "-q",
            "--python",
            str(warm / "bin" / "python"),
            "--index-url",
            index,
            requirement,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert warmed.returncode == 0, warmed.stderr
    launcher = [str(Path(__file__).with_name("headstartdriver.py"))]
    env["HEAD_START_LOG"] = str(Path(work) / "head-start.log")
argv = [
    sys.executable,
    *launcher,
    "install",
    "-q",
    "--python",
    str(venv / "bin" / "python"),
]
if folder is not None:
    argv += ["--target", str(folder)]
result = subprocess.run(
    [*argv, "--index-url", index, requirement], capture_output=True, text=True, env=env
)
store = UnpackedStore(cache / "unpacked", cache / "scratch")
entries = []
for folder in store.entries():
    entry = store.read_entry(folder)
    entries.append(entry is not None and verify_entry(entry) == [])
scratch = cache / "scratch"
print(
    json.dumps(
        {
            "returncode": result.returncode,
            "stderr": result.stderr,
            "unchanged": tree_hash(watched) == before,
            "dot_files": sorted(p.name for p in watched.iterdir() if p.name.startswith(".")),
            "entries": entries,
            "scratch": sorted(p.name for p in scratch.iterdir()) if scratch.is_dir() else [],
        }
    )
)
