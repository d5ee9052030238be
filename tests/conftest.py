"""Shared fixtures: the conformance corpus and the official PEP 825 JSON schema."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from jsonschema import Draft202012Validator

from paths import CORPUS, DATA, VARIANT_SCHEMA
from wheelwise.providers.fingerprint import OVERRIDE_VARIABLES


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The variantlib conformance corpus (real wheels and metadata files)."""
    path = CORPUS
    if not path.is_dir():
        pytest.fail(f"conformance corpus not found at {path}")
    return path


@pytest.fixture(scope="session")
def variant_schema_validator() -> Any:
    """A Draft 2020-12 validator for the official variant-schema-0.1.1.json."""
    path = VARIANT_SCHEMA
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture(scope="session")
def pep850_validator() -> Any:
    """A Draft 2020-12 validator for the PEP 850 v0.2.0 (providers) schema."""
    schema = json.loads((DATA / "pep-0850-variant-schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture
def simulated_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An old x86-64 CPU (level v1), no GPU, no ROCm, private cache and config: the
    providers see nothing of the machine the tests run on."""
    for name in OVERRIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WHEELWISE_CPUINFO", str(DATA / "cpuinfo" / "linux-scientific7-k10"))
    monkeypatch.setenv("WHEELWISE_NVIDIA_DRIVER", "none")
    monkeypatch.setenv("WHEELWISE_AMD_ROCM", "none")
    monkeypatch.setenv("WHEELWISE_AMD_GFX", "none")
    monkeypatch.setenv("WHEELWISE_INTEL_DEVICE_IP", "none")
    monkeypatch.setenv("WHEELWISE_ASCEND_NPU_TYPE", "none")
    monkeypatch.setenv("WHEELWISE_TPU_PRESENT", "none")
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WHEELWISE_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers on 127.0.0.1 are reached directly, whatever the environment says."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> int:
    """forked_map forks two children, even for few items on a one-core runner; the
    parent's pid."""
    from wheelwise import forked_map

    monkeypatch.setattr(forked_map, "STRATEGY", "fork")
    monkeypatch.setattr(forked_map, "cores", lambda: 3)
    return os.getpid()


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The children ``os.fork`` makes during the test, as their parent sees them."""
    pids: list[int] = []
    fork = os.fork

    def counted() -> int:
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return pids


@pytest.fixture
def no_new_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a thread fails, as where the process is at its thread limit."""

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)


# Property tests run without per-example deadlines (CI machines are small and shared);
# CI derandomizes them so that a failure reproduces from the same run.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# The tests name the environments they work on: a virtual environment activated in
# the shell that runs them must not become the commands' default target.
os.environ.pop("VIRTUAL_ENV", None)
