"""The built-in ``tpu`` provider: fake sysfs PCI trees, uv's override variable and
wheelwise's, and fuzzed parsers. Its answers are uv 0.13.9's (docs/provider-ascend-tpu.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from pcikit import pci_tree
from wheelwise.providers.base import Environment, ProviderReport, ProviderUnavailable
from wheelwise.providers.runner import run_builtin
from wheelwise.providers.tpu import (
    TPU_DEVICE_IDS,
    TPUProvider,
    parse_present_override,
)

HOST_BRIDGE = ("0000:00:00.0", "0x8086", "0x1237")
GVNIC = ("0000:00:04.0", "0x1ae0", "0x0042")  # Google's virtual NIC: not a TPU
TPU_V5E = ("0000:00:05.0", "0x1ae0", "0x0063")
TPU_V6E = ("0000:00:06.0", "0x1ae0", "0x006f")


def report(
    tmp_path: Path,
    env: Mapping[str, str] | None = None,
    devices: Sequence[tuple[str, str, str]] = (),
) -> ProviderReport:
    folder = pci_tree(tmp_path, *devices)
    return run_builtin(TPUProvider(Environment(dict(env or {})), pci_devices=str(folder)))


def test_all_configs() -> None:
    configs = TPUProvider(Environment({})).get_all_configs()
    assert [(c.name, c.values, c.multi_value) for c in configs] == [
        ("present", ("true", "false"), False)
    ]


def test_tpu_machine(tmp_path: Path) -> None:
    result = report(tmp_path, devices=[HOST_BRIDGE, GVNIC, TPU_V5E, TPU_V6E])
    assert result.status == "ok"
    assert result.features == {"present": ("true",)}
    assert result.source == str(tmp_path / "pci")
    assert result.detail == "TPUs: 0000:00:05.0 (1ae0:0063), 0000:00:06.0 (1ae0:006f)"


def test_machine_without_a_tpu_answers_false_as_uv_does(tmp_path: Path) -> None:
    result = report(tmp_path, devices=[HOST_BRIDGE, GVNIC])
    assert result.status == "ok"
    assert result.features == {"present": ("false",)}
    assert result.detail.startswith("no TPU (no Google TPU device in ")


def test_every_tpu_id_uv_knows(tmp_path: Path) -> None:
    assert {0x0027, 0x005E, 0x0062, 0x0063, 0x006F} <= TPU_DEVICE_IDS
    for device in sorted(TPU_DEVICE_IDS):
        result = report(
            tmp_path / f"{device:04x}", devices=[("0000:00:04.0", "0x1ae0", f"0x{device:04x}")]
        )
        assert result.features == {"present": ("true",)}, hex(device)
    # Another vendor with a TPU's device id is not a TPU.
    other = report(tmp_path / "other", devices=[("0000:00:04.0", "0x10de", "0x0063")])
    assert other.features == {"present": ("false",)}


def test_no_pci_folder(tmp_path: Path) -> None:
    result = run_builtin(TPUProvider(Environment({}), pci_devices=str(tmp_path / "nowhere")))
    assert result.features == {"present": ("false",)}
    assert result.detail == f"no TPU ({tmp_path / 'nowhere'} does not exist)"


def test_broken_pci_entries_are_skipped(tmp_path: Path) -> None:
    folder = pci_tree(tmp_path, TPU_V5E)
    (folder / "0000:00:01.0").mkdir()  # no vendor file
    (folder / "0000:00:02.0").mkdir()
    (folder / "0000:00:02.0" / "vendor").write_text("0x1ae0\n")  # no device file
    (folder / "0000:00:03.0").mkdir()
    (folder / "0000:00:03.0" / "vendor").write_bytes(b"\xff\x00garbage")
    provider = TPUProvider(Environment({}), pci_devices=str(folder))
    assert provider.tpu_devices() == [("0000:00:05.0", 0x0063)]


@pytest.mark.skipif(
    sys.platform == "win32" or (hasattr(os, "geteuid") and os.geteuid() == 0),
    reason="needs POSIX permissions that apply to this user",
)
def test_unreadable_pci_folder(tmp_path: Path) -> None:
    folder = pci_tree(tmp_path, TPU_V5E)
    folder.chmod(0o000)
    try:
        result = run_builtin(TPUProvider(Environment({}), pci_devices=str(folder)))
    finally:
        folder.chmod(0o755)
    assert result.status == "unavailable"
    assert result.detail.startswith(f"cannot list {folder}: ")


# --- overrides -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "present"),
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("Yes", True),
        # uv reads every other value as "no TPU": these are uv 0.13.9's answers.
        ("0", False),
        ("false", False),
        ("none", False),
        ("on", False),
        (" 1", False),
        ("1.0", False),
        ("garbage", False),
    ],
)
def test_uv_variable(value: str, present: bool, tmp_path: Path) -> None:
    variable = "TPU_VARIANT_PROVIDER_FORCE_PRESENT"
    result = report(tmp_path, {variable: value}, devices=[TPU_V5E] if not present else [])
    assert result.status == "ok"
    assert result.features == {"present": ("true" if present else "false",)}
    assert result.source == variable
    assert result.detail == (
        f"TPU present ({variable}={value})" if present else f"no TPU ({variable}={value})"
    )


@pytest.mark.parametrize(
    ("value", "present"),
    [("true", True), ("1", True), ("on", True), (" YES ", True), ("false", False),
     ("0", False), ("off", False), ("no", False), ("none", False), ("None", False)],
)  # fmt: skip
def test_wheelwise_variable(value: str, present: bool, tmp_path: Path) -> None:
    result = report(tmp_path, {"WHEELWISE_TPU_PRESENT": value})
    assert result.features == {"present": ("true" if present else "false",)}
    assert result.source == "WHEELWISE_TPU_PRESENT"


@pytest.mark.parametrize("value", ["garbage", "v5e", "2", "truthy", "1.0"])
def test_invalid_wheelwise_variable(value: str, tmp_path: Path) -> None:
    result = report(tmp_path, {"WHEELWISE_TPU_PRESENT": value}, devices=[TPU_V5E])
    assert result.status == "unavailable"
    assert result.source == "WHEELWISE_TPU_PRESENT"
    assert f"invalid WHEELWISE_TPU_PRESENT={value!r}" in result.detail
    assert "expected true or false" in result.detail


def test_wheelwise_variable_wins(tmp_path: Path) -> None:
    env = {"WHEELWISE_TPU_PRESENT": "none", "TPU_VARIANT_PROVIDER_FORCE_PRESENT": "1"}
    assert report(tmp_path, env).features == {"present": ("false",)}


# --- fuzzing -------------------------------------------------------------------------------


@bounded(300)
@given(
    st.sampled_from(["WHEELWISE_TPU_PRESENT", "TPU_VARIANT_PROVIDER_FORCE_PRESENT"]),
    st.one_of(st.sampled_from(["1", "true", "no", "none", "YES", "off"]), st.text(max_size=12)),
)
def test_fuzz_override(variable: str, text: str) -> None:
    try:
        present = parse_present_override(variable, text)
    except ProviderUnavailable as exc:
        refusal = str(exc)
    else:
        refusal = ""
    if refusal:
        assert variable == "WHEELWISE_TPU_PRESENT"
        assert refusal.startswith(f"invalid {variable}=")
        return
    assert present is (text.strip().lower() in ("1", "true", "yes", "on"))
    if variable == "TPU_VARIANT_PROVIDER_FORCE_PRESENT":
        assert present is (text.lower() in ("1", "true", "yes"))


@bounded(60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0x1ae0", "0x8086", "junk", ""]),
            st.one_of(st.sampled_from(["0x0063", "0x0042"]), st.text(max_size=8)),
        ),
        max_size=5,
    )
)
def test_fuzz_provider_never_crashes(
    tmp_path_factory: pytest.TempPathFactory, ids: list[tuple[str, str]]
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    devices = [(f"0000:00:{i:02x}.0", vendor, device) for i, (vendor, device) in enumerate(ids)]
    result = report(root, devices=devices)
    assert result.status == "ok"
    expected = any(v == "0x1ae0" and d.strip() in ("0x0063",) for v, d in ids)
    if expected:
        assert result.features == {"present": ("true",)}


# --- the detection cache's fingerprint -------------------------------------------------------


def test_fingerprint_follows_tpus_and_npus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from wheelwise.providers import fingerprint

    for name in fingerprint.OVERRIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    folder = pci_tree(tmp_path, HOST_BRIDGE, GVNIC)
    monkeypatch.setattr(fingerprint, "_PCI_DEVICES", str(folder))
    base = fingerprint.machine_fingerprint("1.0")
    assert fingerprint.pci_devices_of(str(folder), ("0x1ae0",)) == ["0000:00:04.0 0x1ae0 0x0042"]
    pci_tree(tmp_path, TPU_V5E)
    with_tpu = fingerprint.machine_fingerprint("1.0")
    assert with_tpu != base
    pci_tree(tmp_path, ("0000:c1:00.0", "0x19e5", "0xd802"))  # an Ascend 910B
    assert fingerprint.machine_fingerprint("1.0") not in (base, with_tpu)
    # Overrides replace detection: the devices no longer count, the variables do.
    monkeypatch.setenv("WHEELWISE_TPU_PRESENT", "true")
    monkeypatch.setenv("ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE", "910b")
    forced = fingerprint.machine_fingerprint("1.0")
    (folder / "0000:00:05.0" / "device").write_text("0x006f\n")
    (folder / "0000:c1:00.0" / "device").write_text("0xd803\n")
    assert fingerprint.machine_fingerprint("1.0") == forced
    assert "davinci" in fingerprint._DEVICE_PREFIXES  # /dev/davinci_manager
