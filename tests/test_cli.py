"""The ``wheelwise select`` and ``wheelwise variant show`` commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from clikit import invoke
from paths import CORPUS
from wheelfactory import make_wheel, variant_doc

TEST_PACKAGE_JSON = CORPUS / "test-package" / "dist" / "test_package-0-variants.json"
PLUGIN_MACHINE = {"system": {"installable_plugin": {"feat1": ["val1c", "val1b"]}}}


pytestmark = pytest.mark.usefixtures("simulated_machine")


def write_json(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_select_json_with_system_file(tmp_path: Path) -> None:
    system = write_json(tmp_path / "machine.json", PLUGIN_MACHINE)
    result = invoke("select", TEST_PACKAGE_JSON, "--system", system, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document) == ["selected", "order", "rejected"]
    assert document["selected"] == "60567bd9"
    assert document["order"] == ["60567bd9", "foo", "null"]
    assert sorted(document["rejected"]) == ["5d8be4b9", "bar", "fbe82642"]
    for reason in document["rejected"].values():
        assert "installable_plugin :: feat2" in reason


def test_select_accepts_bare_system_object(tmp_path: Path) -> None:
    system = write_json(tmp_path / "machine.json", PLUGIN_MACHINE["system"])
    result = invoke("select", TEST_PACKAGE_JSON, "--system", system, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["order"] == ["60567bd9", "foo", "null"]


def test_select_accepts_a_detect_document(tmp_path: Path) -> None:
    detect = {
        **PLUGIN_MACHINE,
        "providers": {"installable_plugin": {"status": "ok", "source": "test", "detail": ""}},
    }
    system = write_json(tmp_path / "machine.json", detect)
    result = invoke("select", TEST_PACKAGE_JSON, "--system", system, "--json")
    assert json.loads(result.stdout)["selected"] == "60567bd9"


@pytest.mark.parametrize("use", ["none", "build"])
def test_a_build_time_plugin_of_the_v002_draft_is_answered_ahead_of_time(
    tmp_path: Path, use: str
) -> None:
    """PEP 817 draft v0.0.2: ``plugin-use: build`` is a "plugin used only when building
    package", what PEP 817 writes ``install-time = false``: its namespace is answered
    from ``default-priorities.property`` with no plugin run or trusted, as ``none`` is
    (before, only ``null`` was selected)."""
    document = {
        "$schema": "https://variants-schema.wheelnext.dev/v0.0.2.json",
        "default-priorities": {"namespace": ["prio"], "property": {"prio": {"order": ["2", "1"]}}},
        "providers": {"prio": {"plugin-use": use, "requires": ["prio-plugin"]}},
        "variants": {
            "null": {},
            "one": {"prio": {"order": ["1"]}},
            "two": {"prio": {"order": ["2"]}},
        },
    }
    result = invoke("select", write_json(tmp_path / "pub-variants.json", document), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["order"] == ["two", "one", "null"]


def test_select_without_system_detects_this_machine() -> None:
    """The plugin namespace is untrusted here, so only the null variant fits."""
    result = invoke("select", TEST_PACKAGE_JSON, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["selected"] == "null"
    assert document["order"] == ["null"]
    assert len(document["rejected"]) == 5


def test_select_no_compatible_variant(tmp_path: Path) -> None:
    doc = variant_doc("v4", {"x86_64": {"level": ["v4"]}})
    result = invoke("select", write_json(tmp_path / "pkg-1-variants.json", doc), "--json")
    assert json.loads(result.stdout) == {
        "selected": None,
        "order": [],
        "rejected": {"v4": "needs x86_64 :: level :: v4; machine has v1"},
    }


def test_select_human_table(tmp_path: Path) -> None:
    system = write_json(tmp_path / "machine.json", PLUGIN_MACHINE)
    result = invoke("select", TEST_PACKAGE_JSON, "--system", system)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for label in ("60567bd9", "foo", "null", "bar", "fbe82642", "5d8be4b9"):
        assert label in out
    assert "rejected" in out
    assert "selected: 60567bd9" in out


def test_select_reads_legacy_corpus_files() -> None:
    for path in sorted((CORPUS / "variant_json_files").glob("*.json")):
        result = invoke("select", path, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["selected"] == "null"


def _assert_input_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wheelwise: error: ")
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_error_missing_file(tmp_path: Path) -> None:
    _assert_input_error(invoke("select", tmp_path / "nope.json"), "nope.json", "not found")


def test_error_directory(tmp_path: Path) -> None:
    _assert_input_error(invoke("select", tmp_path), "is a directory")


def test_error_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "bad-variants.json"
    path.write_text('{"$schema": ', encoding="utf-8")
    _assert_input_error(invoke("select", path), "bad-variants.json", "invalid JSON")


def test_error_wrong_types(tmp_path: Path) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    doc["default-priorities"]["namespace"] = "x86_64"
    _assert_input_error(
        invoke("select", write_json(tmp_path / "m.json", doc)),
        "default-priorities.namespace",
        "expected a list of strings",
    )


def test_error_bad_label(tmp_path: Path) -> None:
    doc = variant_doc("Bad-Label", {"x86_64": {"level": ["v3"]}})
    _assert_input_error(invoke("select", write_json(tmp_path / "m.json", doc)), "'Bad-Label'")


def test_error_unsupported_schema(tmp_path: Path) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    doc["$schema"] = "https://variants-schema.wheelnext.dev/peps/825/v1.0.0.json"
    _assert_input_error(
        invoke("select", write_json(tmp_path / "m.json", doc)), "1.0.0", "upgrade wheelwise"
    )


def test_error_bad_system_file(tmp_path: Path) -> None:
    system = write_json(tmp_path / "machine.json", {"system": {"nvidia": {"sm_arch": "90"}}})
    _assert_input_error(
        invoke("select", TEST_PACKAGE_JSON, "--system", system), "machine.json", "sm_arch"
    )
    _assert_input_error(
        invoke("select", TEST_PACKAGE_JSON, "--system", tmp_path / "missing.json"),
        "system file not found",
    )


def test_variant_show_json() -> None:
    wheel = CORPUS / "test-package" / "dist" / "test_package-0-py3-none-any-5d8be4b9.whl"
    result = invoke("variant", "show", wheel, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "filename": wheel.name,
        "label": "5d8be4b9",
        "properties": [
            "installable_plugin :: feat1 :: val1c",
            "installable_plugin :: feat2 :: val2b",
        ],
        "namespaces": ["installable_plugin", "non_existing_plugin"],
    }


def test_variant_show_non_variant_and_null() -> None:
    dist = CORPUS / "test-package" / "dist"
    plain = json.loads(
        invoke("variant", "show", dist / "test_package-0-py3-none-any.whl", "--json").stdout
    )
    assert plain["label"] is None
    assert plain["properties"] == []
    null = json.loads(
        invoke("variant", "show", dist / "test_package-0-py3-none-any-null.whl", "--json").stdout
    )
    assert null["label"] == "null"
    assert null["properties"] == []
    human = invoke("variant", "show", dist / "test_package-0-py3-none-any-foo.whl")
    assert "label:      foo" in human.stdout
    assert "installable_plugin :: feat1 :: val1c" in human.stdout


def test_variant_show_errors(tmp_path: Path) -> None:
    _assert_input_error(
        invoke("variant", "show", tmp_path / "pkg-1.0-py3-none-any-v3.whl"), "no such file"
    )
    broken = tmp_path / "pkg-1.0-py3-none-any-v3.whl"
    broken.write_bytes(b"garbage")
    _assert_input_error(invoke("variant", "show", broken), "not a valid wheel")
    no_json = make_wheel(tmp_path, "pkg-2.0-py3-none-any-v3.whl", None)
    _assert_input_error(invoke("variant", "show", no_json), "variant.json")


@pytest.mark.parametrize(
    "args",
    [
        ["select", "/definitely/missing-variants.json"],
        ["variant", "show", "/definitely/pkg-1.0-py3-none-any-x.whl"],
    ],
)
def test_console_script_exit_status(args: list[str]) -> None:
    """The installed entry point, as a real process: exit 2, one line, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "wheelwise", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("wheelwise: error: ")


def _printed_around_main(before: str, at_exit: str) -> list[str]:
    """The lines a process printed that ran *before*, then ``wheelwise --version``
    through :func:`wheelwise.cli.main`, and *at_exit* when it exited (atexit
    handlers still run then)."""
    script = (
        f"import atexit, gc, sys\n{before}\n"
        f"atexit.register(lambda: {at_exit})\n"
        "sys.argv = ['wheelwise', '--version']\n"
        "from wheelwise.cli import main\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_program_chooses_the_switch_interval_while_wheels_stream() -> None:
    # The library leaves the process's switch interval alone; the command line asks
    # for the short one while wheels unpack as they download.
    lines = _printed_around_main(
        "from wheelwise.fetch.handover import prompt_handover\n"
        "print('library', prompt_handover.interval)",
        "print('program', prompt_handover.interval)",
    )
    from wheelwise.fetch.handover import HANDOVER_INTERVAL

    assert lines[0] == "library None"
    assert lines[-1] == f"program {HANDOVER_INTERVAL}"


def test_the_program_collects_garbage_less_often_than_python_by_default() -> None:
    # The thresholds the command line set, not the interpreter's (700, 10, 10).
    lines = _printed_around_main("", "print('thresholds', *gc.get_threshold())")
    from wheelwise.cli import GC_THRESHOLDS

    assert lines[-1] == "thresholds " + " ".join(map(str, GC_THRESHOLDS))
    assert GC_THRESHOLDS[0] > 700
