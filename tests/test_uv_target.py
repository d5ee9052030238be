"""uv's variant target TOML (``UV_VARIANT_LOCK``): reading, writing, the CLI, and uv.

``wheelwise detect --format uv`` writes the file, ``--system FILE`` reads it (or the
``detect --json`` document, told apart by content). Machines are simulated with the
reference providers' ``NV_VARIANT_PROVIDER_FORCE_*`` variables, which uv's built-in
NVIDIA provider honours too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clikit import invoke, run_wheelwise
from indexkit import installer_env, uv_executable
from installkit import installed_build, make_venv
from paths import DATA
from wheelfactory import make_wheel
from wheelwise.cli import fast_detect
from wheelwise.providers.base import ProviderReport
from wheelwise.providers.uv_target import (
    NotUvTarget,
    UvProvider,
    UvTarget,
    parse_uv_target,
    read_uv_target,
    render_uv_target,
    uv_target_from_dict,
)
from wheelwise.variants.errors import InvalidSystem
from wheelwise.variants.supported import SupportedProperties

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

TARGETS = DATA / "uv_target"
ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo_gpu-1.0-variants.json"
K10 = DATA / "cpuinfo" / "linux-scientific7-k10"
HASWELL = DATA / "cpuinfo" / "linux-rhel7-haswell"


pytestmark = pytest.mark.usefixtures("simulated_machine")


GPU_MACHINE = SupportedProperties(
    {
        "nvidia": {
            "cuda_version_lower_bound": ("12.8", "12.7", "12.6"),
            "sm_arch": ("86_real", "80_real", "86_virtual"),
        },
        "x86_64": {"level": ("v3", "v2", "v1"), "avx2": ("on",)},
    }
)


# -- writing and reading back --------------------------------------------------


def test_round_trip_keeps_every_feature_and_value_in_order() -> None:
    text = render_uv_target(UvTarget.from_system(GPU_MACHINE, created_by="wheelwise test"))
    back = parse_uv_target(text)
    assert back == GPU_MACHINE
    assert [list(f) for f in back.namespaces.values()] == [
        ["cuda_version_lower_bound", "sm_arch"],
        ["level", "avx2"],
    ]
    assert back.values("nvidia", "sm_arch") == ("86_real", "80_real", "86_virtual")


def test_written_file_has_uvs_shape() -> None:
    text = render_uv_target(UvTarget.from_system(GPU_MACHINE, created_by="wheelwise 9.9"))
    document = tomllib.loads(text)
    assert document["metadata"] == {"created-by": "wheelwise 9.9", "version": "0.1"}
    assert [p["namespace"] for p in document["provider"]] == ["nvidia", "x86_64"]
    nvidia = document["provider"][0]
    assert nvidia["resolved"] == []
    assert "plugin-api" not in nvidia  # wheelwise ran no plugin for it
    assert nvidia["properties"]["cuda_version_lower_bound"] == ["12.8", "12.7", "12.6"]


def test_round_trip_of_provider_records_and_awkward_strings() -> None:
    target = UvTarget(
        [
            UvProvider(
                "nvidia",
                {"sm_arch": ["90_real"]},
                resolved=['nvidia-variant-provider==0.0.2; python_version >= "3.9"'],
                plugin_api="nvidia_variant_provider.plugin:NvidiaVariantPlugin",
            ),
            UvProvider("empty", {}),
        ],
        created_by='tool "x" \\ with\ttabs\nand a newline, ünïcode \x7f',
    )
    assert read_uv_target(render_uv_target(target)) == target


def test_empty_system_round_trips_as_an_empty_provider_array() -> None:
    text = render_uv_target(UvTarget.from_system(SupportedProperties()))
    assert tomllib.loads(text)["provider"] == []
    assert parse_uv_target(text) == SupportedProperties()


def test_reports_become_comments_only() -> None:
    reports = {
        "nvidia": ProviderReport("nvidia", "ok", "NVML", "CUDA driver 12.8\nGPUs: 8.6"),
        "amd": ProviderReport("amd", "unavailable", "/dev/kfd", "no AMD GPU driver"),
    }
    system = SupportedProperties({"nvidia": {"sm_arch": ("86_real",)}})
    text = render_uv_target(UvTarget.from_system(system), reports=reports)
    assert "# amd: unavailable (/dev/kfd): no AMD GPU driver\n" in text
    assert "# nvidia: NVML: CUDA driver 12.8 GPUs: 8.6\n" in text
    assert parse_uv_target(text) == system


names = st.from_regex(r"[a-z0-9_]{1,12}", fullmatch=True)
values = st.from_regex(r"[a-z0-9_.]{1,10}", fullmatch=True)
systems = st.dictionaries(
    names,
    st.dictionaries(names, st.lists(values, unique=True, max_size=5), max_size=5),
    max_size=4,
).map(
    lambda raw: SupportedProperties(
        {ns: {f: tuple(v) for f, v in fs.items()} for ns, fs in raw.items()}
    )
)


@pytest.mark.slow
@settings(max_examples=150)
@given(systems)
def test_any_system_round_trips(system: SupportedProperties) -> None:
    back = parse_uv_target(render_uv_target(UvTarget.from_system(system)))
    assert back.to_dict() == system.to_dict()
    assert [list(f) for f in back.namespaces.values()] == [
        list(f) for f in system.namespaces.values()
    ]


# -- reading uv-shaped files ---------------------------------------------------


def test_reads_file_with_resolved_providers() -> None:
    path = TARGETS / "gpu-workstation.toml"
    target = read_uv_target(path.read_bytes(), source=str(path))
    assert target.created_by == "uv"
    assert target.version == "0.1"
    assert [p.namespace for p in target.providers] == ["cpu_level", "nvidia"]
    assert target.providers[1].resolved == ("nvidia-variant-provider==0.0.2",)
    assert target.providers[1].plugin_api == "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
    assert target.system.to_dict() == {
        "cpu_level": {"x86_64_level": ["v3", "v2", "v1"]},
        "nvidia": {
            "cuda_version_lower_bound": ["12.8", "12.7", "12.6"],
            "sm_arch": ["86_real", "80_real", "75_real", "86_virtual"],
        },
    }


def test_reads_file_without_providers() -> None:
    target = read_uv_target((TARGETS / "no-providers.toml").read_text())
    assert target.providers == ()
    assert target.created_by == "uv-test"
    assert target.system == SupportedProperties()


def test_reads_namespace_without_plugin() -> None:
    target = read_uv_target((TARGETS / "static-namespace.toml").read_bytes())
    assert target.providers == (UvProvider("gpu", {"cuda": ["14.0", "13.0"]}),)


def test_metadata_is_optional_and_duplicate_values_collapse() -> None:
    text = '[[provider]]\nnamespace = "x86_64"\n[provider.properties]\nlevel = ["v2", "v1", "v2"]\n'
    assert parse_uv_target(text).values("x86_64", "level") == ("v2", "v1")


def test_newer_minor_version_may_add_keys() -> None:
    text = (
        '[metadata]\nversion = "0.2"\nfuture = true\n'
        '[[provider]]\nnamespace = "gpu"\nenable-if = "os_name == \'posix\'"\n'
        '[provider.properties]\ncuda = ["13.0"]\n'
    )
    assert parse_uv_target(text).values("gpu", "cuda") == ("13.0",)


BAD_TARGETS = [
    ("provider = [", NotUvTarget, "f.toml: invalid TOML: "),
    ('name = "x"\n', NotUvTarget, "f.toml: not a uv variant target: expected [[provider]] tables"),
    ("", NotUvTarget, "not a uv variant target"),
    (
        'provider = "nvidia"\n',
        InvalidSystem,
        "f.toml: provider: expected [[provider]] tables, got a string",
    ),
    ("provider = [1]\n", InvalidSystem, "f.toml: [[provider]] #1: expected a table, got int"),
    ("[[provider]]\nresolved = []\n", InvalidSystem, "f.toml: [[provider]] #1: namespace: missing"),
    (
        "[[provider]]\nnamespace = 3\n",
        InvalidSystem,
        "[[provider]] #1: namespace: expected a string, got int",
    ),
    (
        '[[provider]]\nnamespace = "NVIDIA"\n',
        InvalidSystem,
        "f.toml: [[provider]] #1: namespace: invalid variant namespace 'NVIDIA'",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[[provider]]\nnamespace = "gpu"\n',
        InvalidSystem,
        "f.toml: [[provider]] #2: namespace 'gpu' is already described by [[provider]] #1",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\nresolved = "p==1"\n',
        InvalidSystem,
        "[[provider]] #1 (gpu): resolved: expected a list of requirement strings",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\nplugin-api = ["p"]\n',
        InvalidSystem,
        "[[provider]] #1 (gpu): plugin-api: expected a string, got an array",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\nproperties = ["cuda"]\n',
        InvalidSystem,
        "[[provider]] #1 (gpu): properties: expected a table, got an array",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[provider.properties]\ncuda = "13.0"\n',
        InvalidSystem,
        "f.toml: [[provider]] #1 (gpu): properties.cuda: expected a list of value strings",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[provider.properties]\ncuda = [13.0]\n',
        InvalidSystem,
        "[[provider]] #1 (gpu): properties.cuda: expected a list of value strings",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[provider.properties]\ncuda = ["13-0"]\n',
        InvalidSystem,
        "f.toml: [[provider]] #1 (gpu): invalid variant feature value '13-0'",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[provider.properties]\n"Cuda" = ["13.0"]\n',
        InvalidSystem,
        "f.toml: [[provider]] #1 (gpu): invalid variant feature name 'Cuda'",
    ),
    (
        '[[provider]]\nnamespace = "gpu"\n[provider.propertes]\ncuda = ["13.0"]\n',
        InvalidSystem,
        "f.toml: [[provider]] #1: 'propertes': unknown key (expected namespace, resolved, "
        "plugin-api, properties)",
    ),
    (
        '[metadata]\nversion = "0.1"\n[[providers]]\nnamespace = "gpu"\n',
        InvalidSystem,
        "f.toml: 'providers': unknown key (expected metadata, provider)",
    ),
    ('metadata = "0.1"\n', InvalidSystem, "f.toml: metadata: expected a table, got a string"),
    (
        "[metadata]\nversion = 0.1\n",
        InvalidSystem,
        "f.toml: metadata.version: expected a version string",
    ),
    (
        '[metadata]\nversion = "1.0"\n',
        InvalidSystem,
        "f.toml: metadata.version: unsupported target file version '1.0' "
        "(this wheelwise reads 0.x)",
    ),
    (
        "[metadata]\ncreated-by = 1\n",
        InvalidSystem,
        "f.toml: metadata.created-by: expected a string",
    ),
]


@pytest.mark.parametrize(("text", "error", "message"), BAD_TARGETS)
def test_bad_target_is_one_line_naming_file_and_key(
    text: str, error: type[InvalidSystem], message: str
) -> None:
    with pytest.raises(error) as caught:
        parse_uv_target(text.encode(), source="f.toml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("f.toml: ")
    assert "\n" not in str(caught.value)


def test_invalid_utf8_is_not_a_target() -> None:
    with pytest.raises(NotUvTarget, match=r"^f\.toml: not valid UTF-8 \(byte 8\)$"):
        parse_uv_target(b"# caf\xc3\xa9\n\xff = 1\n", source="f.toml")


# -- fuzzing: a value or InvalidSystem, never anything else -------------------


def parses_or_rejects(text: str | bytes) -> None:
    outcome: UvTarget | InvalidSystem
    try:
        outcome = read_uv_target(text, source="fuzz.toml")
    except InvalidSystem as exc:  # the only exception allowed
        outcome = exc
    check_outcome(outcome)


def check_outcome(outcome: UvTarget | InvalidSystem) -> None:
    if isinstance(outcome, InvalidSystem):
        assert str(outcome).startswith("fuzz.toml: ")
        assert "\n" not in str(outcome)
        return
    # Whatever loads is written back as a file that reads the same.
    again = read_uv_target(render_uv_target(outcome))
    assert again.system.to_dict() == outcome.system.to_dict()
    assert again.providers == outcome.providers


VALID_TEXT = (TARGETS / "gpu-workstation.toml").read_text()


@settings(max_examples=300)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_fuzz_arbitrary_text(text: str | bytes) -> None:
    parses_or_rejects(text)


@settings(max_examples=300)
@given(
    st.integers(0, len(VALID_TEXT)),
    st.integers(0, 40),
    st.text(alphabet=st.sampled_from("[]{}=\"',.#\n abcdefgnrsvx_0123456789-"), max_size=20),
)
def test_fuzz_edited_target(start: int, length: int, insert: str) -> None:
    parses_or_rejects(VALID_TEXT[:start] + insert + VALID_TEXT[start + length :])


KEYS = st.sampled_from(
    [
        "provider",
        "metadata",
        "namespace",
        "resolved",
        "plugin-api",
        "properties",
        "version",
        "created-by",
        "cuda",
        "Nvidia",
        "gpu",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["0.1", "1.0", "0.2", "gpu", "13.0", "v3", "0." + "9" * 5000])
)
TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=25,
)


@pytest.mark.slow
@settings(max_examples=400)
@given(st.dictionaries(KEYS, TREES, max_size=4))
def test_fuzz_parsed_structures(raw: dict[str, Any]) -> None:
    outcome: UvTarget | InvalidSystem
    try:
        outcome = uv_target_from_dict(raw, source="fuzz.toml")
    except InvalidSystem as exc:  # the only exception allowed
        outcome = exc
    check_outcome(outcome)


# -- the command line ----------------------------------------------------------


def write_target(path: Path, system: SupportedProperties) -> Path:
    path.write_text(render_uv_target(UvTarget.from_system(system)), encoding="utf-8")
    return path


def test_select_reads_uv_target_like_the_json_document(tmp_path: Path) -> None:
    toml_file = write_target(tmp_path / "machine.toml", GPU_MACHINE)
    json_file = tmp_path / "machine.json"
    json_file.write_text(json.dumps({"system": GPU_MACHINE.to_dict()}), encoding="utf-8")
    from_toml = invoke("select", DEMO, "--system", toml_file, "--json")
    from_json = invoke("select", DEMO, "--system", json_file, "--json")
    assert from_toml.exit_code == 0, from_toml.output
    assert from_toml.stdout == from_json.stdout
    assert json.loads(from_toml.stdout)["order"] == ["cu128", "cu126", "x86_64_v3", "null"]


def test_select_tells_formats_apart_by_content_not_extension(tmp_path: Path) -> None:
    toml_named_json = write_target(tmp_path / "machine.json", GPU_MACHINE)
    json_named_toml = tmp_path / "machine.toml"
    json_named_toml.write_text("\n  " + json.dumps(GPU_MACHINE.to_dict()), encoding="utf-8")
    for path in (toml_named_json, json_named_toml):
        result = invoke("select", DEMO, "--system", path, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["selected"] == "cu128"


def test_system_file_in_neither_format_names_both(tmp_path: Path) -> None:
    path = tmp_path / "machine.txt"
    path.write_text("nvidia: 12.8\n", encoding="utf-8")
    result = invoke("select", DEMO, "--system", path)
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith(f"wheelwise: error: {path}: neither a JSON object")
    assert "uv's variant target TOML" in line
    assert "invalid TOML" in line
    assert "\n" not in line


def test_system_file_with_a_bad_entry_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "machine.toml"
    path.write_text('[[provider]]\nnamespace = "nvidia"\n[provider.properties]\nsm_arch = "86"\n')
    result = invoke("select", DEMO, "--system", path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"wheelwise: error: {path}: [[provider]] #1 (nvidia): properties.sm_arch: "
        "expected a list of value strings, best first\n"
    )


def test_broken_json_is_still_reported_as_json(tmp_path: Path) -> None:
    path = tmp_path / "machine.json"
    path.write_text('{"system": ', encoding="utf-8")
    result = invoke("select", DEMO, "--system", path)
    assert result.exit_code == 2
    assert f"{path}: invalid JSON" in result.stderr


def test_install_dry_run_reads_uv_target(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheelhouse(wheels)
    site = tmp_path / "site"
    assert invoke("index", "build", wheels, "-o", site).exit_code == 0
    machine = SupportedProperties(
        {"nvidia": {"cuda_version_lower_bound": ("12.8", "12.6"), "sm_arch": ("61_real",)}}
    )
    target = write_target(tmp_path / "machine.toml", machine)
    report = tmp_path / "report.json"
    result = invoke(
        "install",
        "--index-url",
        site / "simple",
        "--system",
        target,
        "--dry-run",
        "--report",
        report,
        "-q",
        "example",
    )
    assert result.exit_code == 0, result.output
    [item] = json.loads(report.read_text())["install"]
    assert item["variant"]["label"] == "cu126"


SIMULATED = {
    "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.8",
    "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "8.6,6.1",
}


def test_detect_format_uv_matches_detect_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WHEELWISE_NVIDIA_DRIVER")
    monkeypatch.setenv("WHEELWISE_CPUINFO", str(HASWELL))
    for name, value in SIMULATED.items():
        monkeypatch.setenv(name, value)
    fast = run_wheelwise(["detect", "--format", "uv"])  # the fast path, without click
    assert fast.returncode == 0, fast.stderr
    document = json.loads(run_wheelwise(["detect", "--json"]).stdout)
    system = SupportedProperties.from_dict(document)
    assert parse_uv_target(fast.stdout) == system
    assert system.values("nvidia", "cuda_version_lower_bound")[0] == "12.8"
    assert system.values("nvidia", "sm_arch")[:2] == ("86_real", "85_real")
    assert system.values("x86_64", "level") == ("v3", "v2", "v1")
    assert "# amd: unavailable" in fast.stdout
    assert 'created-by = "wheelwise ' in fast.stdout
    through_click = invoke("detect", "--format", "uv", "--refresh")
    assert through_click.exit_code == 0, through_click.output
    assert through_click.stdout == fast.stdout


@pytest.mark.parametrize("args", [["--json"], ["--format", "json"], ["--format", "uv"]])
def test_detect_documents_are_served_without_click(args: list[str]) -> None:
    argv = [sys.executable, "-X", "importtime", "-m", "wheelwise", "detect", *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    imported = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()}
    assert "wheelwise.cli.fast_detect" in imported
    assert not imported & {"click", "rich", "wheelwise.cli.app"}


def test_detect_format_uv_refresh_and_equals_form() -> None:
    first = run_wheelwise(["detect", "--format=uv", "--refresh"])
    second = run_wheelwise(["detect", "--refresh", "--format", "uv"])
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout
    assert parse_uv_target(first.stdout).values("x86_64", "level") == ("v1",)


def test_detect_format_json_is_the_json_flag() -> None:
    assert (
        run_wheelwise(["detect", "--format", "json"]).stdout
        == run_wheelwise(["detect", "--json"]).stdout
    )
    assert invoke("detect", "--format", "json").stdout == invoke("detect", "--json").stdout


def test_detect_default_format_is_the_table() -> None:
    result = invoke("detect")
    assert result.exit_code == 0, result.output
    assert "namespace" in result.stdout
    assert "--format uv" in result.stdout


@pytest.mark.parametrize(
    "args",
    [["detect", "--json", "--format", "uv"], ["detect", "--format", "xml"], ["detect", "--format"]],
)
def test_detect_rejects_conflicting_or_unknown_formats(args: list[str]) -> None:
    result = run_wheelwise(args)
    assert result.returncode == 2
    assert "--format" in result.stderr or "--json" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("argv", "handled"),
    [
        (["detect", "--json"], True),
        (["detect", "--json", "--refresh"], True),
        (["detect", "--format", "uv"], True),
        (["detect", "--refresh", "--format=uv"], True),
        (["detect", "--format", "json"], True),
        (["detect"], False),
        (["detect", "--format", "table"], False),
        (["detect", "--json", "--json"], False),
        (["detect", "--json", "--format", "uv"], False),
        (["detect", "--format"], False),
        (["detect", "--refresh", "--refresh", "--json"], False),
        (["select", "--json"], False),
        ([], False),
    ],
)
def test_fast_path_takes_only_plain_document_requests(argv: list[str], handled: bool) -> None:
    assert fast_detect.handles(argv) is handled


# -- uv, the real peer ---------------------------------------------------------

NVIDIA_LABELS = {
    "cu126": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ["60_real", "61_real", "86_real"]},
    "cu128": {"cuda_version_lower_bound": ["12.8"], "sm_arch": ["86_real", "90_real"]},
    "cu130": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]},
}


def build_wheelhouse(directory: Path) -> Path:
    """example 1.0: three CUDA builds and the null variant, and their merged
    ``*-variants.json``. The metadata (merged and in each wheel) is in the legacy
    format whose ``providers`` entry names the reference NVIDIA provider, which uv
    0.13 answers with its built-in one; wheelwise answers with its own."""
    directory.mkdir()
    variants: dict[str, Any] = {
        **{label: {"nvidia": features} for label, features in NVIDIA_LABELS.items()},
        "null": {},
    }
    for label, properties in variants.items():
        make_wheel(
            directory,
            f"example-1.0-py3-none-any-{label}.whl",
            legacy_metadata({label: properties}),
            extra_members={"example/__init__.py": f"VARIANT = {label!r}\n".encode()},
            record=True,
        )
    path = directory / "example-1.0-variants.json"
    path.write_text(json.dumps(legacy_metadata(variants)), encoding="utf-8")
    return path


def legacy_metadata(variants: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
        "default-priorities": {"namespace": ["nvidia"]},
        "providers": {
            "nvidia": {
                "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
                "requires": ["nvidia-variant-provider>=0.0.1"],
            }
        },
        "variants": variants,
    }


@pytest.mark.parametrize(
    ("driver", "gpu", "expected"),
    [
        ("12.8", "8.6", "cu128"),
        ("12.8", "6.1", "cu126"),
        ("13.0", "9.0", "cu130"),
        ("12.4", "8.6", "null"),
    ],
)
def test_uv_installs_the_variant_wheelwise_selects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str, gpu: str, expected: str
) -> None:
    """One simulated machine, two tools: the target file wheelwise writes for it,
    read back with --system, selects the build that uv installs with that file in
    UV_VARIANT_LOCK. uv 0.13.9 does not read UV_VARIANT_LOCK (its own providers
    answer, from the same NV_VARIANT_PROVIDER_FORCE_* simulation); a uv that reads
    the file gets the properties from it instead, and must agree all the same."""
    machine = {
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": driver,
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": gpu,
    }
    monkeypatch.delenv("WHEELWISE_NVIDIA_DRIVER")
    for name, value in machine.items():
        monkeypatch.setenv(name, value)
    wheels = tmp_path / "wheels"
    variants_json = build_wheelhouse(wheels)

    detected = run_wheelwise(["detect", "--format", "uv"])
    assert detected.returncode == 0, detected.stderr
    target = tmp_path / "target.toml"
    target.write_text(detected.stdout, encoding="utf-8")
    selected = run_wheelwise(["select", variants_json, "--system", target, "--json"])
    assert selected.returncode == 0, selected.stderr
    assert json.loads(selected.stdout)["selected"] == expected

    python = make_venv(tmp_path / "venv")
    env = {**installer_env(tmp_path / "home"), **machine, "UV_VARIANT_LOCK": str(target)}
    env = {k: v for k, v in env.items() if not k.startswith("WHEELWISE_")}
    result = subprocess.run(
        [
            uv_executable(),
            "pip",
            "install",
            "--no-config",
            "--python",
            str(python),
            "--no-cache",
            "--offline",
            "--preview-features",
            "wheel-variants",
            "--no-index",
            "--find-links",
            str(wheels),
            "example",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "example") == repr(expected)
