"""The built-in ``intel`` provider: fake sysfs PCI trees, the environment overrides,
the published provider's IP table and compatibility rules, and fuzzed parsers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from wheelwise.providers.base import Environment, ProviderReport, ProviderUnavailable
from wheelwise.providers.intel import (
    DEVICE_IP_TABLE,
    DEVICE_IPS,
    PCI_DEVICE_IPS,
    PCI_DEVICES,
    IntelProvider,
    compatible_ips,
    parse_device_ip,
    parse_device_ip_override,
)
from wheelwise.providers.pci_ids import parse_sysfs_hex
from wheelwise.providers.runner import run_builtin

# (vendor, class, device) of PCI functions as Linux sysfs writes them.
HOST_BRIDGE = ("0x8086", "0x060000", "0x0d57")
ARC_A770 = ("0x8086", "0x030000", "0x56a0")
ARC_A380 = ("0x8086", "0x030000", "0x56a5")
MAX_1550 = ("0x8086", "0x038000", "0x0bd5")  # display controller, "other" subclass
UHD_770 = ("0x8086", "0x030000", "0x4680")  # Alder Lake-S integrated
MTL_H = ("0x8086", "0x030000", "0x7d55")  # Meteor Lake-H integrated (Arc Graphics)
UHD_630 = ("0x8086", "0x030000", "0x3e92")  # Coffee Lake: no device IP in the table
NVIDIA_H100 = ("0x10de", "0x030200", "0x2330")
INTEL_ETHERNET = ("0x8086", "0x020000", "0x1572")
VIRTIO = ("0x1af4", "0x010000", "0x1042")

Function = tuple[str, str, str]


def pci_tree(root: Path, functions: Mapping[str, Function]) -> Path:
    """A fake ``/sys/bus/pci/devices``: one folder per address with its id files."""
    devices = root / "devices"
    devices.mkdir(parents=True)
    for address, (vendor, pci_class, device) in functions.items():
        folder = devices / address
        folder.mkdir()
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "class").write_text(pci_class + "\n")
        (folder / "device").write_text(device + "\n")
    return devices


def report(tree: Path | str, env: Mapping[str, str] | None = None) -> ProviderReport:
    return run_builtin(IntelProvider(Environment(dict(env or {})), pci_devices=str(tree)))


# --- vocabulary and the published table ----------------------------------------------------


def test_all_configs() -> None:
    configs = IntelProvider(Environment({})).get_all_configs()
    assert [(c.name, c.multi_value) for c in configs] == [("device_ip", True)]
    values = configs[0].values
    assert values == DEVICE_IPS
    assert set(DEVICE_IP_TABLE) <= set(values)
    # The published README's Xe3 targets are valid values too.
    assert {"30.0.0", "30.0.4", "30.1.0", "30.1.1"} <= set(values)
    assert len(set(values)) == len(values)
    as_tuples = [tuple(int(p) for p in v.split(".")) for v in values]
    assert as_tuples == sorted(as_tuples, reverse=True)  # newest first
    # Every value PyTorch's xpu builds name is known.
    for ip in ("12.55.8", "12.60.7", "12.71.4", "12.74.4", "20.1.0", "20.4.4", "30.0.4", "30.1.0"):
        assert ip in values


@pytest.mark.parametrize(
    ("ip", "expected"),
    [
        # The published provider's test_GMDID_in_table: [ip, base] or [ip].
        ("12.60.7", ("12.60.7",)),
        ("12.55.8", ("12.55.8",)),
        ("12.56.5", ("12.56.5", "12.55.8")),
        ("12.57.0", ("12.57.0", "12.55.8")),
        ("12.71.4", ("12.71.4", "12.70.4")),
        ("12.74.4", ("12.74.4",)),
        ("20.4.4", ("20.4.4", "20.1.0")),
        ("20.2.0", ("20.2.0", "20.1.0")),
        ("30.1.0", ("30.1.0", "30.0.4")),
        ("30.5.4", ("30.5.4", "30.0.4")),
        ("35.11.0", ("35.11.0",)),
        # Not in the table: the IP alone (test_GMDID_not_in_table).
        ("72.208.52", ("72.208.52",)),
    ],
)
def test_compatible_ips_follow_the_published_table(ip: str, expected: tuple[str, ...]) -> None:
    assert compatible_ips(ip) == expected


def test_table_is_consistent() -> None:
    for ip, (platforms, base) in DEVICE_IP_TABLE.items():
        assert parse_device_ip(ip) == ip
        assert platforms
        if base:
            assert base in DEVICE_IP_TABLE
            assert not DEVICE_IP_TABLE[base][1]  # no chains
    for device, ip in PCI_DEVICE_IPS.items():
        assert 0 <= device <= 0xFFFF
        assert ip in DEVICE_IP_TABLE


def test_pci_ids_of_known_products() -> None:
    assert PCI_DEVICE_IPS[0x56A0] == "12.55.8"  # Arc A770
    assert PCI_DEVICE_IPS[0x56A5] == "12.56.5"  # Arc A380
    assert PCI_DEVICE_IPS[0x56C0] == "12.55.8"  # Data Center GPU Flex 170
    assert PCI_DEVICE_IPS[0x0BD5] == "12.60.7"  # Data Center GPU Max 1550
    assert PCI_DEVICE_IPS[0xE20B] == "20.1.0"  # Arc B580
    assert PCI_DEVICE_IPS[0x7D55] == "12.71.4"  # Meteor Lake-H
    assert PCI_DEVICE_IPS[0x7D67] == "12.70.4"  # Arrow Lake-S takes the MTL-U IP
    assert PCI_DEVICE_IPS[0xB090] == "30.1.0"  # Panther Lake-U
    assert PCI_DEVICE_IPS[0xB080] == "30.0.4"  # Panther Lake-H
    assert 0x3E92 not in PCI_DEVICE_IPS


# --- fake sysfs trees ------------------------------------------------------------------------


def test_arc_a770(tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:00:00.0": HOST_BRIDGE, "0000:03:00.0": ARC_A770})
    result = report(tree)
    assert result.status == "ok"
    assert result.features == {"device_ip": ("12.55.8",)}
    assert result.source == str(tree)
    assert result.detail == "GPUs: 12.55.8 (acm-g10, PCI 0x56a0 at 0000:03:00.0)"


def test_arc_a380_also_takes_its_base_ip(tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:03:00.0": ARC_A380})
    assert report(tree).features == {"device_ip": ("12.56.5", "12.55.8")}


def test_data_center_gpu_max_1550(tmp_path: Path) -> None:
    # A Max 1550 shows two PCI functions on some systems; the IP is listed once.
    tree = pci_tree(tmp_path, {"0000:29:00.0": MAX_1550, "0000:3a:00.0": MAX_1550})
    result = report(tree)
    assert result.status == "ok"
    assert result.features == {"device_ip": ("12.60.7",)}
    assert result.detail == (
        "GPUs: 12.60.7 (pvc, PCI 0x0bd5 at 0000:29:00.0); 12.60.7 (pvc, PCI 0x0bd5 at 0000:3a:00.0)"
    )


def test_integrated_gpu(tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:00:00.0": HOST_BRIDGE, "0000:00:02.0": UHD_770})
    result = report(tree)
    assert result.features == {"device_ip": ("12.2.0",)}
    mtl = pci_tree(tmp_path / "mtl", {"0000:00:02.0": MTL_H})
    assert report(mtl).features == {"device_ip": ("12.71.4", "12.70.4")}


def test_several_gpus_in_address_order_each_followed_by_its_base(tmp_path: Path) -> None:
    tree = pci_tree(
        tmp_path,
        {"0000:03:00.0": ARC_A380, "0000:00:02.0": MTL_H, "0000:04:00.0": ARC_A770},
    )
    assert report(tree).features == {"device_ip": ("12.71.4", "12.70.4", "12.56.5", "12.55.8")}


def test_non_intel_gpu(tmp_path: Path) -> None:
    tree = pci_tree(
        tmp_path,
        {"0000:00:00.0": HOST_BRIDGE, "0000:00:03.0": INTEL_ETHERNET, "0000:17:00.0": NVIDIA_H100},
    )
    result = report(tree)
    assert result.status == "unavailable"
    assert result.source == str(tree)
    assert result.detail == (
        f"no Intel GPU: none of the 3 PCI devices in {tree} is an Intel display controller "
        "(vendor 0x8086, class 0x03xxxx)"
    )


def test_no_pci_devices_folder(tmp_path: Path) -> None:
    result = report(tmp_path / "missing")
    assert result.status == "unavailable"
    assert result.detail == (
        f"no Intel GPU: cannot list PCI devices ({tmp_path / 'missing'}: No such file or directory)"
    )
    empty = pci_tree(tmp_path / "empty", {})
    assert "none of the 0 PCI devices" in report(empty).detail


def test_intel_gpu_without_known_ip(tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:00:02.0": UHD_630})
    result = report(tree)
    assert result.status == "unavailable"
    assert result.detail == (
        "Intel GPU(s) found but none has a known device IP: PCI 0x3e92 at 0000:00:02.0 "
        "(set WHEELWISE_INTEL_DEVICE_IP to name its IP)"
    )
    both = pci_tree(tmp_path / "both", {"0000:00:02.0": UHD_630, "0000:03:00.0": ARC_A770})
    result = report(both)
    assert result.features == {"device_ip": ("12.55.8",)}
    assert "no known device IP left out: PCI 0x3e92 at 0000:00:02.0" in result.detail


def test_broken_entries_are_notes(tmp_path: Path) -> None:
    tree = pci_tree(
        tmp_path, {"0000:00:02.0": ("0x8086", "garbage", "0x56a0"), "0000:03:00.0": ARC_A770}
    )
    (tree / "0000:05:00.0").mkdir()  # no files at all
    result = report(tree)
    assert result.status == "ok"
    assert result.features == {"device_ip": ("12.55.8",)}
    assert f"{tree / '0000:00:02.0'} unreadable (unexpected content 'garbage')" in result.detail
    assert f"{tree / '0000:05:00.0'} unreadable (No such file or directory)" in result.detail


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_does_not_hang_detection(tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:03:00.0": ARC_A770})
    folder = tree / "0000:04:00.0"
    folder.mkdir()
    os.mkfifo(folder / "vendor")
    result = report(tree)
    assert result.features == {"device_ip": ("12.55.8",)}


def test_default_path() -> None:
    assert IntelProvider(Environment({})).pci_devices == PCI_DEVICES == "/sys/bus/pci/devices"


# --- environment overrides ---------------------------------------------------------------


def test_override_skips_detection(tmp_path: Path) -> None:
    result = report(tmp_path / "missing", {"WHEELWISE_INTEL_DEVICE_IP": "12.55.8"})
    assert result.status == "ok"
    assert result.features == {"device_ip": ("12.55.8",)}
    assert result.source == "WHEELWISE_INTEL_DEVICE_IP"
    assert result.detail == "GPUs: 12.55.8 (acm-g10)"


def test_published_variable(tmp_path: Path) -> None:
    # The published provider's test_force_existing_ip, and PyTorch's CI value.
    variable = "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"
    assert report(tmp_path, {variable: "12.60.7"}).features == {"device_ip": ("12.60.7",)}
    assert report(tmp_path, {variable: "30.0.4"}).features == {"device_ip": ("30.0.4",)}
    # As the published plugin, the forced value alone: no base IP added (PTL-U's
    # base is 30.0.4, an A380's 12.55.8); WHEELWISE_INTEL_DEVICE_IP adds them.
    forced = report(tmp_path, {variable: "30.1.0"})
    assert forced.features == {"device_ip": ("30.1.0",)}
    assert forced.source == variable
    assert report(tmp_path, {variable: "12.56.5"}).features == {"device_ip": ("12.56.5",)}
    simulated = report(tmp_path, {"WHEELWISE_INTEL_DEVICE_IP": "12.56.5"})
    assert simulated.features == {"device_ip": ("12.56.5", "12.55.8")}


def test_wheelwise_variable_wins(tmp_path: Path) -> None:
    env = {
        "WHEELWISE_INTEL_DEVICE_IP": "12.60.7",
        "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP": "20.1.0",
    }
    result = report(tmp_path, env)
    assert result.features == {"device_ip": ("12.60.7",)}
    assert result.source == "WHEELWISE_INTEL_DEVICE_IP"
    # An empty value counts as unset.
    env["WHEELWISE_INTEL_DEVICE_IP"] = ""
    assert report(tmp_path, env).features == {"device_ip": ("20.1.0",)}


def test_several_override_values(tmp_path: Path) -> None:
    result = report(tmp_path, {"WHEELWISE_INTEL_DEVICE_IP": "12.56.5, 12.060.07;12.55.8"})
    assert result.features == {"device_ip": ("12.56.5", "12.55.8", "12.60.7")}
    assert result.detail == "GPUs: 12.56.5 (acm-g11); 12.60.7 (pvc); 12.55.8 (acm-g10)"


@pytest.mark.parametrize(
    "variable", ["WHEELWISE_INTEL_DEVICE_IP", "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"]
)
def test_none_means_no_intel_gpu(variable: str, tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:03:00.0": ARC_A770})
    result = report(tree, {variable: "None"})
    assert result.status == "unavailable"
    assert result.detail == f"no Intel GPU ({variable}=None)"
    assert result.source == variable


def test_unknown_override_ip(tmp_path: Path) -> None:
    # The published provider's test_force_invalid_ip forces 12.99.99 and gets nothing:
    # so does wheelwise (a revision above 63 is no device IP at all).
    variable = "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"
    invalid = report(tmp_path, {variable: "12.99.99"})
    assert invalid.status == "unavailable"
    assert "'12.99.99' is out of range" in invalid.detail
    result = report(tmp_path, {variable: "12.99.9"})
    assert result.status == "unavailable"
    assert result.detail.startswith("Intel device IP(s) 12.99.9 not known (known: 35.11.0, ")
    mixed = report(tmp_path, {"WHEELWISE_INTEL_DEVICE_IP": "12.99.9,20.1.0"})
    assert mixed.features == {"device_ip": ("20.1.0",)}
    assert "unknown Intel device IP(s) 12.99.9 left out" in mixed.detail


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("arc", "'arc' is not a device IP such as 12.55.8"),
        ("12.55", "'12.55' is not a device IP"),
        ("12.55.8.1", "'12.55.8.1' is not a device IP"),
        ("0x030dc008", "'0x030dc008' is not a device IP"),
        ("12.256.0", "'12.256.0' is out of range"),
        ("12.55.64", "'12.55.64' is out of range"),
        ("1024.0.0", "'1024.0.0' is out of range"),
        (",", "expected an Intel device IP such as 12.55.8 or 'none'"),
    ],
)
def test_invalid_override(value: str, expected: str, tmp_path: Path) -> None:
    tree = pci_tree(tmp_path, {"0000:03:00.0": ARC_A770})
    result = report(tree, {"WHEELWISE_INTEL_DEVICE_IP": value})
    assert result.status == "unavailable"
    assert result.detail.startswith(f"invalid WHEELWISE_INTEL_DEVICE_IP={value!r}: expected ")
    assert expected in result.detail
    assert result.source == "WHEELWISE_INTEL_DEVICE_IP"


# --- parsers -------------------------------------------------------------------------------


def test_parse_device_ip() -> None:
    assert parse_device_ip("12.55.8") == "12.55.8"
    assert parse_device_ip(" 12.055.08\n") == "12.55.8"
    assert parse_device_ip("1023.255.63") == "1023.255.63"
    for bad in (
        "",
        "12",
        "12.55.",
        "a.b.c",
        "12.55.8 rev",
        "-1.0.0",
        "1.2.3.4",
        "\u0661\u0662.5.8",
    ):
        with pytest.raises(ValueError, match="is not a device IP"):
            parse_device_ip(bad)


def test_parse_sysfs_hex() -> None:
    assert parse_sysfs_hex("0x8086\n", 16) == 0x8086
    assert parse_sysfs_hex("0x030000\n", 24) == 0x030000
    assert parse_sysfs_hex("0X56A0", 16) == 0x56A0
    for bad in ("", "8086", "0x", "0xZZ", "0x8086 0x8086"):
        with pytest.raises(ValueError, match="unexpected content"):
            parse_sysfs_hex(bad, 16)
    with pytest.raises(ValueError, match="does not fit in 16 bits"):
        parse_sysfs_hex("0x10000", 16)


def test_parse_override_list() -> None:
    assert parse_device_ip_override("V", "none") == []
    assert parse_device_ip_override("V", " NONE ") == []
    assert parse_device_ip_override("V", "12.55.8") == ["12.55.8"]
    assert parse_device_ip_override("V", "12.55.8 12.60.7") == ["12.55.8", "12.60.7"]
    with pytest.raises(ProviderUnavailable) as caught:
        parse_device_ip_override("V", "12.55.8,gfx90a")
    assert caught.value.source == "V"


IP_LIKE = st.from_regex(r"\A[0-9]{0,5}(\.[0-9]{0,4}){0,3}\Z")
SEPARATED = st.lists(st.one_of(IP_LIKE, st.text(max_size=8)), max_size=4).map(",".join)


@bounded(300)
@given(st.one_of(IP_LIKE, st.text(max_size=24)))
def test_fuzz_parse_device_ip(text: str) -> None:
    try:
        ip = parse_device_ip(text)
    except ValueError:
        return
    assert parse_device_ip(ip) == ip  # the answer is canonical


@bounded(300)
@given(st.one_of(SEPARATED, st.text(max_size=40)))
def test_fuzz_parse_device_ip_override(text: str) -> None:
    try:
        ips = parse_device_ip_override("WHEELWISE_INTEL_DEVICE_IP", text)
    except ProviderUnavailable as exc:
        refusal = str(exc)
    else:
        assert all(parse_device_ip(ip) == ip for ip in ips)
        return
    assert refusal.startswith("invalid WHEELWISE_INTEL_DEVICE_IP=")


@bounded(300)
@given(
    st.one_of(
        st.from_regex(r"\A0[xX][0-9a-fA-F]{0,10}\s?\Z"),
        st.binary(max_size=16).map(lambda b: b.decode("ascii", "replace")),
    ),
    st.sampled_from([16, 24]),
)
def test_fuzz_parse_sysfs_hex(text: str, bits: int) -> None:
    try:
        value = parse_sysfs_hex(text, bits)
    except ValueError:
        return
    assert 0 <= value < 1 << bits


@bounded(100)
@given(
    st.one_of(IP_LIKE, st.text(max_size=20)),
    st.one_of(SEPARATED, st.text(max_size=30)),
)
def test_fuzz_probe_always_reports(variable_value: str, other_value: str) -> None:
    """Whatever the variables hold, the provider answers ok or unavailable."""
    env = {
        "WHEELWISE_INTEL_DEVICE_IP": variable_value,
        "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP": other_value,
    }
    result = report("/nonexistent/sys/bus/pci/devices", env)
    assert result.status in ("ok", "unavailable"), result.detail
    assert result.detail
    if result.status == "ok":
        assert set(result.features["device_ip"]) <= set(DEVICE_IPS)


@bounded(60, function_fixtures=True)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.sampled_from(["0x8086", "0x10de"]), st.text(max_size=8)),
            st.one_of(st.sampled_from(["0x030000", "0x038000"]), st.text(max_size=8)),
            st.one_of(
                st.sampled_from([f"{d:#06x}" for d in (0x56A0, 0x56A5, 0x0BD5, 0x3E92)]),
                st.binary(max_size=8).map(lambda b: b.decode("latin-1")),
            ),
        ),
        max_size=4,
    )
)
def test_fuzz_sysfs_contents(tmp_path: Path, functions: list[Function]) -> None:
    """Any content in the id files: ok or unavailable with a reason, never an error."""
    root = tmp_path / str(len(list(tmp_path.iterdir())))
    tree = pci_tree(root, {f"0000:{i:02x}:00.0": f for i, f in enumerate(functions)})
    result = report(tree)
    assert result.status in ("ok", "unavailable"), result.detail
    assert result.detail
