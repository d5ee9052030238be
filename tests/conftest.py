"""Shared fixtures: the conformance corpus and the official PEP 825 JSON schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

# /work/main/tests/conftest.py -> /work/shared
_SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The variantlib conformance corpus (real wheels and metadata files)."""
    path = _SHARED / "corpus" / "variantlib-test-package"
    if not path.is_dir():
        pytest.fail(f"conformance corpus not found at {path}")
    return path


@pytest.fixture(scope="session")
def variant_schema_validator() -> Any:
    """A Draft 2020-12 validator for the official variant-schema-0.1.1.json."""
    path = _SHARED / "spec" / "variant-schema-0.1.1.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)
