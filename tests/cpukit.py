"""The built-in CPU providers (``x86_64``, ``aarch64``) on public /proc/cpuinfo and
sysctl dumps (``tests/data/cpuinfo``) or on dumps a test writes."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from paths import DATA
from wheelwise.providers._cpu import CpuProvider
from wheelwise.providers.base import Environment
from wheelwise.providers.runner import run_builtin

CPUINFO = DATA / "cpuinfo"

P = TypeVar("P", bound=CpuProvider)


def cpu_provider(
    kind: type[P], path: Path | str, machine: str | None = None, platform: str | None = None
) -> P:
    """A *kind* provider simulating the machine described by the dump at *path*."""
    return kind(Environment({"WHEELWISE_CPUINFO": str(path)}), machine=machine, platform=platform)


def features(provider: CpuProvider) -> dict[str, tuple[str, ...]]:
    """What *provider* detects; it must detect something."""
    report = run_builtin(provider)
    assert report.status == "ok", report.detail
    return dict(report.features)


def write_dump(tmp_path: Path, text: str, name: str = "cpuinfo") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
