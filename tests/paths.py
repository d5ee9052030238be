"""Where the tests' data files live."""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
# Real variant wheels and metadata written by variantlib 0.2 (see data/README.md).
CORPUS = DATA / "corpus" / "variantlib-test-package"
# The official PEP 825 JSON schema, version 0.1.1.
VARIANT_SCHEMA = DATA / "variant-schema-0.1.1.json"
# The JSON schema of PEP 817's draft format (PyTorch 2.8 and 2.9 publish it).
DRAFT_VARIANT_SCHEMA = DATA / "pep-0817-variant-schema.json"
