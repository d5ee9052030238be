"""The built-in ``amd`` provider: replayed rocminfo / rocm_agent_enumerator output,
command failures, the ROCm version file, and environment overrides."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from paths import DATA
from wheelwise.providers.amd import (
    GFX_TARGETS,
    ROCM_VERSIONS,
    AMDProvider,
    CommandError,
    parse_agent_enumerator,
    parse_rocminfo,
    parse_version_file,
    run_command,
)
from wheelwise.providers.base import Environment, ProviderReport
from wheelwise.providers.runner import run_builtin

AMD = DATA / "amd"
ROCMINFO_MI210 = (AMD / "rocminfo-mi210.txt").read_text()
ROCMINFO_MI300X = (AMD / "rocminfo-mi300x.txt").read_text()
ENUMERATOR_MI300X = (AMD / "rocm_agent_enumerator-name-mi300x.txt").read_text()
VERSION_FILE = (AMD / "rocm-version-6.2.0-66.txt").read_text()

Outcome = str | BaseException


class Replay:
    """A runner that replays recorded outputs (or raises) per command name."""

    def __init__(self, outputs: Mapping[str, Outcome]) -> None:
        self.outputs = dict(outputs)
        self.calls: list[tuple[tuple[str, ...], float]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> str:
        self.calls.append((tuple(argv), timeout))
        outcome = self.outputs.get(argv[0], CommandError("not found"))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def never(argv: Sequence[str], timeout: float) -> str:
    raise AssertionError(f"ran {argv}")


def rocm_root(tmp_path: Path, version: str | None = VERSION_FILE) -> Path:
    root = tmp_path / "rocm"
    (root / ".info").mkdir(parents=True)
    if version is not None:
        (root / ".info" / "version").write_text(version)
    return root


def report(
    env: Mapping[str, str], run: Callable[[Sequence[str], float], str] = never
) -> ProviderReport:
    return run_builtin(AMDProvider(Environment(dict(env)), run=run))


# --- vocabulary --------------------------------------------------------------------------


def test_all_configs() -> None:
    configs = AMDProvider(Environment({})).get_all_configs()
    assert [(c.name, c.multi_value) for c in configs] == [
        ("rocm_version", False),
        ("gfx_arch", True),
    ]
    rocm, gfx = configs[0].values, configs[1].values
    # Every reference value is kept.
    assert {"6.4", "6.3"} <= set(rocm)
    reference_gfx = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100",
                     "gfx1101", "gfx1102", "gfx1200", "gfx1201"]  # fmt: skip
    assert [g for g in gfx if g in reference_gfx] == reference_gfx
    for added in ("gfx940", "gfx941", "gfx950", "gfx1010", "gfx1031", "gfx1150", "gfx1151"):
        assert added in gfx
    assert rocm[0] == "7.9"
    assert rocm[-1] == "5.0"
    assert "6.4" in rocm
    assert "6.5" not in rocm
    assert "5.7" in rocm
    assert rocm == ROCM_VERSIONS
    assert gfx == GFX_TARGETS
    assert len(set(rocm)) == len(rocm)
    assert len(set(gfx)) == len(gfx)
    # Newest first.
    as_tuples = [tuple(int(p) for p in v.split(".")) for v in rocm]
    assert as_tuples == sorted(as_tuples, reverse=True)


# --- replayed detection ------------------------------------------------------------------------


def test_mi210(tmp_path: Path) -> None:
    root = rocm_root(tmp_path)
    run = Replay({"rocminfo": ROCMINFO_MI210})
    result = report({"ROCM_PATH": str(root)}, run)
    assert result.status == "ok"
    assert result.features == {"gfx_arch": ("gfx90a",), "rocm_version": ("6.2",)}
    assert list(result.features) == ["gfx_arch", "rocm_version"]  # the reference's order
    assert result.source == f"rocminfo + {root / '.info' / 'version'}"
    assert result.detail == "ROCm 6.2; GPUs: gfx90a"
    assert run.calls == [(("rocminfo",), 3.0)]


def test_mi300x_generic_isa_is_ignored(tmp_path: Path) -> None:
    run = Replay({"rocminfo": ROCMINFO_MI300X})
    result = report({"ROCM_PATH": str(rocm_root(tmp_path))}, run)
    assert result.status == "ok"
    assert result.features["gfx_arch"] == ("gfx942",)
    assert result.detail == "ROCm 6.2; GPUs: gfx942"


def test_parse_rocminfo() -> None:
    assert parse_rocminfo(ROCMINFO_MI210) == ["gfx90a"]
    assert parse_rocminfo(ROCMINFO_MI300X) == ["gfx942", "gfx942"]
    # GPUs in listed order, not sorted (the reference sorts: gfx1100 < gfx90a).
    mixed = ROCMINFO_MI300X.replace("Name:                    gfx942  ", "Name:   gfx1100 ", 1)
    assert parse_rocminfo(mixed) == ["gfx1100", "gfx942"]
    # A GPU agent whose Name is not a processor falls back to its ISA name.
    renamed = ROCMINFO_MI210.replace("Name:                    gfx90a  ", "Name: mystery  ")
    assert parse_rocminfo(renamed) == ["gfx90a"]
    with pytest.raises(ValueError, match="no HSA agents"):
        parse_rocminfo("hello\n")


def test_rocminfo_without_gpu_falls_back_to_the_agent_enumerator(tmp_path: Path) -> None:
    cpu_only = ROCMINFO_MI210.split("*******                  \nAgent 2")[0]
    run = Replay({"rocminfo": cpu_only, "rocm_agent_enumerator": ENUMERATOR_MI300X})
    result = report({"ROCM_PATH": str(rocm_root(tmp_path))}, run)
    assert result.status == "ok"
    assert result.features["gfx_arch"] == ("gfx942",)
    assert result.source.startswith("rocm_agent_enumerator + ")
    assert [argv for argv, _ in run.calls] == [("rocminfo",), ("rocm_agent_enumerator", "-name")]


def test_parse_agent_enumerator() -> None:
    assert parse_agent_enumerator(ENUMERATOR_MI300X) == ["gfx942", "gfx942"]
    assert parse_agent_enumerator("gfx000\n") == []
    assert parse_agent_enumerator("gfx1100\ngfx1036\n") == ["gfx1100", "gfx1036"]
    with pytest.raises(ValueError, match="unexpected line"):
        parse_agent_enumerator("Segmentation fault\n")


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (CommandError("not found"), "rocminfo: not found"),
        (CommandError("timed out after 3 s"), "rocminfo: timed out after 3 s"),
        (
            CommandError(
                "exited with status 1: Unable to open /dev/kfd read-write: Permission denied"
            ),
            "rocminfo: exited with status 1: Unable to open /dev/kfd",
        ),
        (FileNotFoundError(2, "No such file or directory"), "rocminfo: [Errno 2]"),
        (TimeoutError(), "rocminfo: TimeoutError"),
    ],
)
def test_rocminfo_failure_falls_back(failure: Exception, expected: str, tmp_path: Path) -> None:
    root = rocm_root(tmp_path)
    fallback = report(
        {"ROCM_PATH": str(root)},
        Replay({"rocminfo": failure, "rocm_agent_enumerator": ENUMERATOR_MI300X}),
    )
    assert fallback.status == "ok"
    assert fallback.features["gfx_arch"] == ("gfx942",)
    both_fail = report(
        {"ROCM_PATH": str(root)},
        Replay({"rocminfo": failure, "rocm_agent_enumerator": CommandError("not found")}),
    )
    assert both_fail.status == "unavailable"
    assert both_fail.detail.startswith("ROCm 6.2 found but no AMD GPU: ")
    assert expected in both_fail.detail
    assert "rocm_agent_enumerator -name: not found" in both_fail.detail


def test_garbage_output(tmp_path: Path) -> None:
    run = Replay({"rocminfo": "\x00\x01garbage", "rocm_agent_enumerator": "%%%\n"})
    result = report({"ROCM_PATH": str(tmp_path / "nowhere")}, run)
    assert result.status == "unavailable"
    assert result.detail == (
        "no AMD GPU: rocminfo: unexpected output (no HSA agents listed); "
        "rocm_agent_enumerator -name: unexpected output (unexpected line '%%%')"
    )
    assert result.source == "rocminfo, rocm_agent_enumerator"


def test_nothing_installed(tmp_path: Path) -> None:
    result = report({"ROCM_PATH": str(tmp_path / "nowhere")}, Replay({}))
    assert result.status == "unavailable"
    assert (
        result.detail == "no AMD GPU: rocminfo: not found; rocm_agent_enumerator -name: not found"
    )


def test_version_file_missing_reports_gfx_only(tmp_path: Path) -> None:
    root = rocm_root(tmp_path, version=None)
    result = report({"ROCM_PATH": str(root)}, Replay({"rocminfo": ROCMINFO_MI210}))
    assert result.status == "ok"
    assert result.features == {"gfx_arch": ("gfx90a",)}
    assert result.detail.startswith("GPUs: gfx90a; ROCm version unknown (")
    assert "not found" in result.detail


def test_version_file_garbage(tmp_path: Path) -> None:
    root = rocm_root(tmp_path, version="garbage\n")
    result = report({"ROCM_PATH": str(root)}, Replay({"rocminfo": ROCMINFO_MI210}))
    assert result.features == {"gfx_arch": ("gfx90a",)}
    assert "unexpected content 'garbage'" in result.detail


def test_parse_version_file() -> None:
    assert parse_version_file(VERSION_FILE) == (6, 2)
    assert parse_version_file("6.4.1\n") == (6, 4)
    assert parse_version_file("7.0.0-38\n") == (7, 0)
    assert parse_version_file("5.7") == (5, 7)
    for bad in ("", "six", "6", "6.x"):
        with pytest.raises(ValueError, match="unexpected content"):
            parse_version_file(bad)


def test_unknown_rocm_version_leaves_rocm_version_out(tmp_path: Path) -> None:
    root = rocm_root(tmp_path, version="8.1.0-1\n")
    result = report({"ROCM_PATH": str(root)}, Replay({"rocminfo": ROCMINFO_MI210}))
    assert result.status == "ok"
    assert result.features == {"gfx_arch": ("gfx90a",)}
    assert "ROCm 8.1 is not a known version" in result.detail


def test_unknown_gfx_is_left_out() -> None:
    result = report({"WHEELWISE_AMD_ROCM": "6.4", "WHEELWISE_AMD_GFX": "gfx1250,gfx942"})
    assert result.features["gfx_arch"] == ("gfx942",)
    assert "unknown GPU architecture(s) gfx1250 left out" in result.detail
    only_unknown = report({"WHEELWISE_AMD_ROCM": "6.4", "WHEELWISE_AMD_GFX": "gfx1250"})
    assert only_unknown.status == "unavailable"
    assert "gfx1250" in only_unknown.detail


# --- environment overrides ---------------------------------------------------------------


def test_overrides_run_nothing() -> None:
    result = report({"WHEELWISE_AMD_ROCM": "6.4.1", "WHEELWISE_AMD_GFX": "gfx90a,gfx942,gfx90a"})
    assert result.status == "ok"
    assert result.features == {"gfx_arch": ("gfx90a", "gfx942"), "rocm_version": ("6.4",)}
    assert result.source == "WHEELWISE_AMD_GFX + WHEELWISE_AMD_ROCM"
    assert result.detail == "ROCm 6.4; GPUs: gfx90a, gfx942"


def test_reference_variables() -> None:
    result = report(
        {
            "AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION": "6.4.0",
            "AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH": "gfx1100; gfx942:sramecc+:xnack-",
        }
    )
    assert result.status == "ok"
    assert result.features == {"gfx_arch": ("gfx1100", "gfx942"), "rocm_version": ("6.4",)}


def test_wheelwise_variables_win() -> None:
    result = report(
        {
            "WHEELWISE_AMD_ROCM": "6.3",
            "AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION": "bogus",
            "WHEELWISE_AMD_GFX": "gfx950",
            "AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH": "gfx900",
        }
    )
    assert result.features == {"gfx_arch": ("gfx950",), "rocm_version": ("6.3",)}


def test_rocm_override_keeps_gfx_detection() -> None:
    run = Replay({"rocminfo": ROCMINFO_MI210})
    result = report({"WHEELWISE_AMD_ROCM": "7.0"}, run)
    assert result.features == {"gfx_arch": ("gfx90a",), "rocm_version": ("7.0",)}
    assert result.source == "rocminfo + WHEELWISE_AMD_ROCM"


def test_gfx_override_keeps_version_detection(tmp_path: Path) -> None:
    root = rocm_root(tmp_path)
    result = report({"ROCM_PATH": str(root), "WHEELWISE_AMD_GFX": "gfx1201"})
    assert result.features == {"gfx_arch": ("gfx1201",), "rocm_version": ("6.2",)}


def test_none_overrides() -> None:
    no_rocm = report({"WHEELWISE_AMD_ROCM": "none", "WHEELWISE_AMD_GFX": "gfx90a"})
    assert (no_rocm.status, no_rocm.detail) == ("unavailable", "no ROCm (WHEELWISE_AMD_ROCM=none)")
    no_gpu = report({"WHEELWISE_AMD_ROCM": "6.4", "WHEELWISE_AMD_GFX": "none"})
    assert (no_gpu.status, no_gpu.detail) == ("unavailable", "no AMD GPU (WHEELWISE_AMD_GFX=none)")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("WHEELWISE_AMD_ROCM", "6"),
        ("WHEELWISE_AMD_ROCM", "rocm-6.4"),
        ("AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION", "6.4.0.1"),
        ("WHEELWISE_AMD_GFX", "mi300x"),
        ("WHEELWISE_AMD_GFX", "gfx90a,gfx9-4-generic"),
        ("AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH", "gfx000"),
    ],
)
def test_invalid_overrides(variable: str, value: str) -> None:
    env = {variable: value}
    env["WHEELWISE_AMD_GFX" if "ROCM" in variable else "WHEELWISE_AMD_ROCM"] = (
        "gfx90a" if "ROCM" in variable else "6.4"
    )
    result = report(env)
    assert result.status == "unavailable"
    assert result.source == variable
    assert f"invalid {variable}={value!r}" in result.detail
    assert "expected" in result.detail
    assert "e.g." in result.detail


# --- the real runner ---------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX shell commands")
def test_run_command(tmp_path: Path) -> None:
    assert run_command(["sh", "-c", "echo gfx90a"], 3.0) == "gfx90a\n"
    with pytest.raises(CommandError, match=r"^not found$"):
        run_command(["wheelwise-no-such-command"], 3.0)
    with pytest.raises(CommandError, match=r"^exited with status 3: boom$"):
        run_command(["sh", "-c", "echo boom >&2; exit 3"], 3.0)
    with pytest.raises(CommandError, match=r"^timed out after 0\.2 s$"):
        run_command(["sleep", "5"], 0.2)
    # Commands are also looked up in $ROCM_PATH/bin, which is often not on PATH.
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "rocm_agent_enumerator"
    tool.write_text("#!/bin/sh\necho gfx000\necho gfx942:sramecc+:xnack-\n")
    tool.chmod(0o755)
    assert run_command(["rocm_agent_enumerator", "-name"], 3.0, search=[str(tmp_path / "bin")]) == (
        "gfx000\ngfx942:sramecc+:xnack-\n"
    )
    if shutil.which("rocminfo") is not None:
        pytest.skip("rocminfo is installed here")
    # The real runner: rocminfo is missing, the enumerator comes from $ROCM_PATH/bin.
    env = Environment({"ROCM_PATH": str(tmp_path), "WHEELWISE_AMD_ROCM": "6.4"})
    kfd = tmp_path / "kfd"
    kfd.write_text("")  # the kernel driver's device node, as on a ROCm machine
    result = run_builtin(AMDProvider(env, kfd_device=str(kfd)))
    assert result.status == "ok", result.detail
    assert result.features == {"gfx_arch": ("gfx942",), "rocm_version": ("6.4",)}
    assert result.source == "rocm_agent_enumerator + WHEELWISE_AMD_ROCM"


def test_no_kernel_driver_means_no_commands_run(tmp_path: Path) -> None:
    """Without /dev/kfd no ROCm tool can list a GPU: unavailable, nothing started."""
    (tmp_path / "bin").mkdir()
    marker = tmp_path / "ran"
    tool = tmp_path / "bin" / "rocminfo"
    tool.write_text(f"#!/bin/sh\ntouch {marker}\n")
    tool.chmod(0o755)
    env = Environment({"ROCM_PATH": str(tmp_path), "WHEELWISE_AMD_ROCM": "6.4"})
    result = run_builtin(AMDProvider(env, kfd_device=str(tmp_path / "no-kfd")))
    assert result.status == "unavailable"
    assert "no-kfd does not exist" in result.detail
    assert "ROCm 6.4 found" in result.detail
    assert not marker.exists()
