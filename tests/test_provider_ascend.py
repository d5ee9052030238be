"""The built-in ``ascend`` provider: replayed ``npu-smi info`` output, fake sysfs PCI
trees and device folders, command failures and hangs, the environment overrides, and
fuzzed parsers."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded, damaged
from paths import DATA
from pcikit import pci_tree
from wheelwise.providers.amd import CommandError
from wheelwise.providers.ascend import (
    NPU_TYPES,
    AscendProvider,
    normalize_npu_type,
    parse_npu_smi,
    parse_npu_type_override,
)
from wheelwise.providers.base import Environment, ProviderReport, ProviderUnavailable
from wheelwise.providers.runner import run_builtin

ASCEND = DATA / "ascend"
SMI_910B3 = (ASCEND / "npu-smi-info-910b3.txt").read_text()
SMI_310P3 = (ASCEND / "npu-smi-info-310p3.txt").read_text()
SMI_A3 = (ASCEND / "npu-smi-info-a3.txt").read_text()

Outcome = str | BaseException


class Replay:
    """A runner that replays one recorded output (or raises) for npu-smi."""

    def __init__(self, outcome: Outcome | None = None) -> None:
        self.outcome = CommandError("not found") if outcome is None else outcome
        self.calls: list[tuple[tuple[str, ...], float]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> str:
        self.calls.append((tuple(argv), timeout))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def never(argv: Sequence[str], timeout: float) -> str:
    raise AssertionError(f"ran {argv}")


HOST_BRIDGE = ("0000:00:00.0", "0x8086", "0x0d57")
HUAWEI_NIC = ("0000:3d:00.0", "0x19e5", "0x1822")  # a Hi1822 network card, not an NPU
NPU_910B = ("0000:c1:00.0", "0x19e5", "0xd802")
NPU_910B_2 = ("0000:c2:00.0", "0x19e5", "0xd802")
NPU_A3 = ("0000:9d:00.0", "0x19e5", "0xd803")
NPU_310P = ("0000:04:00.0", "0x19e5", "0xd500")
NPU_910_FIRST = ("0000:81:00.0", "0x19e5", "0xd801")


def provider(
    tmp_path: Path,
    env: Mapping[str, str] | None = None,
    run: Callable[[Sequence[str], float], str] | None = never,
    devices: Sequence[tuple[str, str, str]] = (),
) -> AscendProvider:
    return AscendProvider(
        Environment(dict(env or {})),
        run=run,
        pci_devices=str(pci_tree(tmp_path, *devices)),
        dev_dir=str(tmp_path / "dev"),
    )


def report(
    tmp_path: Path,
    env: Mapping[str, str] | None = None,
    run: Callable[[Sequence[str], float], str] | None = never,
    devices: Sequence[tuple[str, str, str]] = (),
) -> ProviderReport:
    return run_builtin(provider(tmp_path, env, run, devices))


# --- vocabulary --------------------------------------------------------------------------


def test_all_configs(tmp_path: Path) -> None:
    configs = provider(tmp_path).get_all_configs()
    assert [(c.name, c.multi_value) for c in configs] == [("npu_type", False)]
    assert configs[0].values == NPU_TYPES
    # vllm-ascend's index keys on 910b; the other families npu-smi names.
    assert {"910b", "910c", "310p", "310b", "310", "950"} <= set(NPU_TYPES)
    assert len(set(NPU_TYPES)) == len(NPU_TYPES)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("910B3", "910b"),
        ("910B", "910b"),
        ("910B4-1", "910b"),
        ("Ascend910B2C", "910b"),
        ("310P3", "310p"),
        ("310B4", "310b"),
        ("310B1", "310b"),
        ("Ascend910", "910c"),
        ("910_9391", "910c"),
        ("Ascend910_9382", "910c"),
        ("910PremiumA", "910premiuma"),
        ("910ProB", "910prob"),
        ("910A", "910a"),
        ("Ascend950", "950"),
        ("910c", "910c"),
        ("310", "310"),
    ],
)
def test_normalize_npu_type(name: str, expected: str) -> None:
    assert normalize_npu_type(name) == expected


@pytest.mark.parametrize("name", ["", "NPU", "Name", "0", "910", "OK", "abc123", "9 10B"])
def test_normalize_rejects_what_is_not_a_chip(name: str) -> None:
    with pytest.raises(ValueError, match="not an Ascend chip name"):
        normalize_npu_type(name)


# --- npu-smi -----------------------------------------------------------------------------


def test_parse_npu_smi() -> None:
    assert parse_npu_smi(SMI_910B3) == ["910b", "910b"]  # process table rows left out
    assert parse_npu_smi(SMI_310P3) == ["310p"]
    assert parse_npu_smi(SMI_A3) == ["910c", "910c"]
    for text in ("", "garbage\n", "| NPU  Name | Health |\n", "| 0   0   | 0000:C1:00.0 |\n"):
        with pytest.raises(ValueError, match="no NPU listed"):
            parse_npu_smi(text)


def test_910b_machine(tmp_path: Path) -> None:
    run = Replay(SMI_910B3)
    result = report(tmp_path, run=run)
    assert result.status == "ok"
    assert result.features == {"npu_type": ("910b",)}
    assert result.source == "npu-smi"
    assert result.detail == "NPUs: 910b"
    assert run.calls == [(("npu-smi", "info"), 5.0)]


def test_a3_and_310p_machines(tmp_path: Path) -> None:
    assert report(tmp_path / "a", run=Replay(SMI_A3)).features == {"npu_type": ("910c",)}
    assert report(tmp_path / "b", run=Replay(SMI_310P3)).features == {"npu_type": ("310p",)}


def test_mixed_types_are_all_listed(tmp_path: Path) -> None:
    mixed = SMI_910B3.replace("| 1     910B3 ", "| 1     310P3 ")
    result = report(tmp_path, run=Replay(mixed))
    assert result.features == {"npu_type": ("910b", "310p")}
    assert "NPUs of more than one type" in result.detail


def test_unknown_type_is_left_out(tmp_path: Path) -> None:
    future = SMI_910B3.replace("| 1     910B3 ", "| 1     920X1 ")
    result = report(tmp_path, run=Replay(future))
    assert result.features == {"npu_type": ("910b",)}
    assert "unknown NPU type(s) 920x left out" in result.detail
    only = report(tmp_path / "only", run=Replay(SMI_910B3.replace("910B3", "920X1")))
    assert only.status == "unavailable"
    assert "920x found but none is a known type" in only.detail


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (CommandError("not found"), "npu-smi info: not found"),
        (CommandError("timed out after 5 s"), "npu-smi info: timed out after 5 s"),
        (
            CommandError("exited with status 255: dcmi module initialize failed. ret is -8005"),
            "npu-smi info: exited with status 255: dcmi module initialize failed",
        ),
        (PermissionError(13, "Permission denied"), "npu-smi info: [Errno 13]"),
        (TimeoutError(), "npu-smi info: TimeoutError"),
        ("\x00\x01garbage", "npu-smi info: unexpected output (no NPU listed)"),
    ],
)
def test_npu_smi_failures(failure: Outcome, expected: str, tmp_path: Path) -> None:
    absent = report(tmp_path / "absent", run=Replay(failure))
    assert absent.status == "unavailable"
    assert absent.detail.startswith("no Ascend NPU: ")
    assert expected in absent.detail
    assert "no Huawei NPU" in absent.detail
    # With a Huawei NPU on the PCI bus, its id still names the family.
    fallback = report(tmp_path / "pci", run=Replay(failure), devices=[HOST_BRIDGE, NPU_910B])
    assert fallback.status == "ok"
    assert fallback.features == {"npu_type": ("910b",)}
    assert fallback.source.endswith("pci")
    assert expected in fallback.detail


# --- sysfs -------------------------------------------------------------------------------


def test_pci_ids_name_the_family(tmp_path: Path) -> None:
    devices = [HOST_BRIDGE, HUAWEI_NIC, NPU_910B, NPU_910B_2, NPU_A3, NPU_310P]
    types, notes = provider(tmp_path, devices=devices).pci_npus()
    assert types == ["310p", "910c", "910b", "910b"]  # in address order; the NIC is not one
    assert notes == []
    ambiguous = provider(tmp_path / "first", devices=[NPU_910_FIRST]).pci_npus()
    assert ambiguous == ([], ["Ascend 910 (d801) at 0000:81:00.0 needs npu-smi to be named"])
    result = report(tmp_path / "old", run=Replay(), devices=[NPU_910_FIRST])
    assert result.status == "unavailable"
    assert "needs npu-smi to be named" in result.detail


def test_broken_pci_entries_are_skipped(tmp_path: Path) -> None:
    folder = pci_tree(tmp_path, NPU_910B)
    (folder / "0000:00:01.0").mkdir()  # no vendor file
    (folder / "0000:00:02.0").mkdir()
    (folder / "0000:00:02.0" / "vendor").write_text("0x19e5\n")  # no device file
    (folder / "0000:00:03.0").mkdir()
    (folder / "0000:00:03.0" / "vendor").write_text("\xff\xfe garbage")
    p = AscendProvider(Environment({}), run=Replay(), pci_devices=str(folder))
    assert p.pci_npus() == (["910b"], [])


def test_no_pci_folder(tmp_path: Path) -> None:
    p = AscendProvider(Environment({}), run=Replay(), pci_devices=str(tmp_path / "nowhere"))
    result = run_builtin(p)
    assert result.status == "unavailable"
    assert "cannot list" in result.detail
    assert "npu-smi info: not found" in result.detail


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux pre-check")
def test_no_npu_and_no_driver_runs_nothing(tmp_path: Path) -> None:
    """Without a Huawei NPU on the bus and without /dev/davinci_manager, npu-smi could
    list nothing: unavailable at once, nothing started."""
    p = AscendProvider(Environment({}), pci_devices=str(pci_tree(tmp_path, HOST_BRIDGE)))
    p.dev_dir = str(tmp_path / "dev")
    result = run_builtin(p)
    assert result.status == "unavailable"
    assert result.detail == (
        f"no Ascend NPU ({p.pci_devices}: no Huawei NPU; "
        f"{tmp_path / 'dev' / 'davinci_manager'} does not exist)"
    )


def _fake_npu_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """An ``npu-smi`` shell script running *script*, the only one the provider finds."""
    if shutil.which("npu-smi") is not None:
        pytest.skip("npu-smi is installed here")
    folder = tmp_path / "bin"
    folder.mkdir()
    tool = folder / "npu-smi"
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)
    monkeypatch.setattr("wheelwise.providers.ascend.NPU_SMI_FOLDERS", (str(folder),))


@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX shell scripts")
def test_real_runner_with_a_fake_npu_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_npu_smi(tmp_path, monkeypatch, f"cat '{ASCEND / 'npu-smi-info-910b3.txt'}'")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "davinci_manager").write_text("")  # the driver's device node
    p = AscendProvider(Environment({}), pci_devices=str(pci_tree(tmp_path)))
    p.dev_dir = str(tmp_path / "dev")
    result = run_builtin(p)
    assert (result.status, result.features) == ("ok", {"npu_type": ("910b",)}), result.detail


@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX shell scripts")
def test_a_hanging_npu_smi_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_npu_smi(tmp_path, monkeypatch, "exec sleep 30")
    p = AscendProvider(Environment({}), pci_devices=str(pci_tree(tmp_path, NPU_A3)), timeout=0.3)
    result = run_builtin(p)
    # npu-smi gave no answer in time; the PCI id still names the family.
    assert result.status == "ok"
    assert result.features == {"npu_type": ("910c",)}
    assert "npu-smi info: timed out after 0.3 s" in result.detail


# --- environment overrides ---------------------------------------------------------------


def test_overrides_run_nothing(tmp_path: Path) -> None:
    result = report(tmp_path, {"WHEELWISE_ASCEND_NPU_TYPE": "910b"}, run=never)
    assert (result.status, result.features) == ("ok", {"npu_type": ("910b",)})
    assert result.source == "WHEELWISE_ASCEND_NPU_TYPE"
    reference = report(tmp_path / "r", {"ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "310p"})
    assert reference.features == {"npu_type": ("310p",)}
    names = report(tmp_path / "n", {"WHEELWISE_ASCEND_NPU_TYPE": "Ascend910B3, 910B1"})
    assert names.features == {"npu_type": ("910b",)}


def test_wheelwise_variable_wins(tmp_path: Path) -> None:
    env = {"WHEELWISE_ASCEND_NPU_TYPE": "910c", "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "bogus!"}
    assert report(tmp_path, env).features == {"npu_type": ("910c",)}


@pytest.mark.parametrize(
    "variable", ["WHEELWISE_ASCEND_NPU_TYPE", "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE"]
)
def test_none_override(variable: str, tmp_path: Path) -> None:
    result = report(tmp_path, {variable: "none"}, devices=[NPU_910B])
    assert (result.status, result.source) == ("unavailable", variable)
    assert result.detail == f"no Ascend NPU ({variable}=none)"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("WHEELWISE_ASCEND_NPU_TYPE", "a2"),
        ("WHEELWISE_ASCEND_NPU_TYPE", "910b,banana"),
        ("WHEELWISE_ASCEND_NPU_TYPE", ",,"),
        ("ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE", "NPU"),
        ("ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE", "9 1 0"),
    ],
)
def test_invalid_overrides(variable: str, value: str, tmp_path: Path) -> None:
    result = report(tmp_path, {variable: value})
    assert result.status == "unavailable"
    assert result.source == variable
    assert f"invalid {variable}={value!r}" in result.detail
    assert "expected an Ascend NPU type such as 910b" in result.detail


# --- fuzzing -----------------------------------------------------------------------------

NAMES = st.sampled_from(
    ["910B3", "910B1", "310P3", "310B4", "Ascend910", "910_9391", "910PremiumA", "Name", "0"]
)
ROWS = st.builds(
    lambda index, name, tail: f"| {index}     {name}     | {tail} |",
    st.integers(0, 64),
    NAMES,
    st.text(alphabet="OK0123456789./ :-", max_size=20),
)


@bounded(300)
@given(st.one_of(st.lists(ROWS, max_size=6).map("\n".join), st.text(max_size=400)))
def test_fuzz_parse_npu_smi(text: str) -> None:
    try:
        types = parse_npu_smi(text)
    except ValueError as exc:
        refusal = str(exc)
    else:
        assert types
        assert all(isinstance(npu, str) and npu for npu in types)
        return
    assert refusal == "no NPU listed"


@bounded(100)
@given(damaged(SMI_910B3.encode()))
def test_fuzz_damaged_npu_smi_output(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        types = parse_npu_smi(text)
    except ValueError:
        return
    assert types
    assert all(npu == npu.lower() and npu[0].isdigit() for npu in types)


@bounded(300)
@given(st.one_of(NAMES, st.text(max_size=30)))
def test_fuzz_normalize(name: str) -> None:
    try:
        value = normalize_npu_type(name)
    except ValueError as exc:
        refusal = str(exc)
    else:
        assert value == value.lower()
        assert value[0].isdigit()
        return
    assert "not an Ascend chip name" in refusal


@bounded(300)
@given(st.one_of(st.lists(NAMES, max_size=4).map(",".join), st.text(max_size=40)))
def test_fuzz_override(text: str) -> None:
    try:
        types = parse_npu_type_override("WHEELWISE_ASCEND_NPU_TYPE", text)
    except ProviderUnavailable as exc:
        refusal = str(exc)
    else:
        assert types or text.strip().lower() == "none"
        return
    assert refusal.startswith("invalid WHEELWISE_ASCEND_NPU_TYPE=")


@bounded(60, function_fixtures=True)
@given(
    st.lists(
        st.tuples(st.sampled_from(["0x19e5", "0x8086", "junk", ""]), st.text(max_size=8)),
        max_size=5,
    ),
    st.one_of(st.just(SMI_910B3), st.text(max_size=80)),
)
def test_fuzz_provider_never_crashes(
    tmp_path_factory: pytest.TempPathFactory, ids: list[tuple[str, str]], output: str
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    devices = [(f"0000:00:{i:02x}.0", vendor, device) for i, (vendor, device) in enumerate(ids)]
    result = report(root, run=Replay(output), devices=devices)
    assert result.status in ("ok", "unavailable"), result.detail
    assert result.detail
