"""vllm-ascend's variant index keys its builds on ``ascend :: npu_type`` (``910b`` for
the Atlas A2 build): the built-in ``ascend`` provider selects them, offline, from a
synthetic PEP 825 document of that shape (tests/data/ascend/)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from paths import DATA
from wheelwise.cli.app import cli as main
from wheelwise.variants import VariantMetadata

VLLM_ASCEND = DATA / "ascend" / "vllm_ascend-0.13.0rc1-variants.json"

pytestmark = pytest.mark.usefixtures("simulated_machine")


def select(variable: str, value: str, *args: str) -> Result:
    """``wheelwise select`` on a simulated machine whose Ascend NPU is named by
    *variable* (no GPU, no plugin trusted)."""
    env: dict[str, str | None] = {"WHEELWISE_ASCEND_NPU_TYPE": None, variable: value}
    return CliRunner(env=env).invoke(main, ["select", str(VLLM_ASCEND), *args])


def test_the_document_is_pep825() -> None:
    metadata = VariantMetadata.from_json(VLLM_ASCEND.read_bytes())
    assert sorted(metadata.variants) == ["310p", "a2", "a3", "null"]


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("WHEELWISE_ASCEND_NPU_TYPE", "910b", "a2"),
        ("ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE", "910b", "a2"),  # the published variable
        ("WHEELWISE_ASCEND_NPU_TYPE", "Ascend910B3", "a2"),  # an npu-smi name
        ("WHEELWISE_ASCEND_NPU_TYPE", "910c", "a3"),
        ("WHEELWISE_ASCEND_NPU_TYPE", "310p", "310p"),
        ("WHEELWISE_ASCEND_NPU_TYPE", "310b", "null"),  # no build for Atlas 200I A2
        ("WHEELWISE_ASCEND_NPU_TYPE", "none", "null"),
    ],
)
def test_vllm_ascend_build_for_the_npu(variable: str, value: str, expected: str) -> None:
    result = select(variable, value, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["selected"] == expected


def test_an_ascend_910b_machine_gets_the_a2_build() -> None:
    result = select("WHEELWISE_ASCEND_NPU_TYPE", "910b")
    assert result.exit_code == 0, result.output
    assert "selected: a2" in result.output
    document = json.loads(select("WHEELWISE_ASCEND_NPU_TYPE", "910b", "--json").stdout)
    assert document["rejected"]["a3"].endswith("machine has 910b")


def test_a_machine_without_an_npu_gets_the_null_build_and_says_why() -> None:
    result = select("WHEELWISE_ASCEND_NPU_TYPE", "none")
    assert result.exit_code == 0, result.output
    assert "selected: null" in result.output
    assert "ascend: unavailable: no Ascend NPU (WHEELWISE_ASCEND_NPU_TYPE=none)" in result.output
    document = json.loads(select("WHEELWISE_ASCEND_NPU_TYPE", "none", "--json").stdout)
    assert document["rejected"]["a2"].endswith("machine has no ascend support")
