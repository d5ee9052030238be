"""Build a variant wheel from a source tree (``wheelwise build``).

The project's own PEP 517 backend (setuptools, hatchling, flit-core, ...) builds
an ordinary wheel, by default in an isolated environment into which pip installs
``build-system.requires`` (pip reads the user's own configuration: index, proxy,
``PIP_FIND_LINKS``/``PIP_NO_INDEX`` for offline wheelhouses). The wheel is then
turned into a variant wheel by :func:`wheelwise.wheels.make.make_variant`, with
the namespace priorities of the project's ``[variant]`` table (PEP 817; its
legacy provider data is read and checked, but PEP 825's variant.json has no
place for it).

The plain wheel is built in a temporary directory; only the finished variant
wheel is written (atomically) into the output directory. Bad variant data is
refused before the backend runs.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.variants.errors import InvalidMetadata
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.errors import BuildError
from wheelwise.wheels.make import choose_label, make_variant, variant_metadata
from wheelwise.wheels.pep517 import (
    KEPT_OUTPUT_LINES,
    QUOTED_OUTPUT_LINES,
    OutputCallback,
    build_plain_wheel,
)
from wheelwise.wheels.validate import validate_properties

__all__ = [
    "KEPT_OUTPUT_LINES",
    "QUOTED_OUTPUT_LINES",
    "OutputCallback",
    "build_plain_wheel",
    "build_variant_wheel",
    "load_project_variant",
]


def load_project_variant(source_dir: Path) -> VariantMetadata | None:
    """The ``[variant]`` data of *source_dir*'s pyproject.toml (None without the table)."""
    if not source_dir.is_dir():
        raise BuildError(f"{source_dir}: no such directory")
    pyproject = source_dir / "pyproject.toml"
    if not pyproject.is_file():
        raise BuildError(
            f"{source_dir}: no pyproject.toml; a variant build needs a project with a "
            "pyproject.toml (its [build-system] and [variant] tables)"
        )
    source = str(pyproject)
    try:
        data = loads_toml(pyproject.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidMetadata(f"{source}: not valid UTF-8") from None
    except UntrustedDocumentError as exc:
        raise InvalidMetadata(f"{source}: {exc}") from None
    if "variant" not in data:
        return None
    return VariantMetadata.from_pyproject(data, source=source)


def _check_request(
    properties: Sequence[VariantProperty],
    label: str | None,
    null: bool,
    project: VariantMetadata | None,
    validate: bool,
) -> None:
    """Refuse what make_variant would refuse, before the (possibly long) backend build."""
    if not null and not properties and label != NULL_LABEL:
        raise BuildError(
            "a variant build needs variant properties or the null variant; for a plain, "
            "non-variant wheel use `python -m build`"
        )
    final_label = choose_label(properties, label, null=null)
    if final_label == NULL_LABEL and project is None:
        raise BuildError(
            "the null variant needs the project's namespace priorities: add a [variant] "
            "table with default-priorities.namespace to pyproject.toml"
        )
    if validate:
        validate_properties(properties)
    variant_metadata(properties, final_label, project=project)


def build_variant_wheel(
    source_dir: Path,
    out_dir: Path,
    *,
    properties: Sequence[VariantProperty] = (),
    label: str | None = None,
    null: bool = False,
    validate: bool = True,
    isolation: bool = True,
    output: OutputCallback | None = None,
) -> Path:
    """Build *source_dir* into a variant wheel in *out_dir*; return its path.

    *properties* are the wheel's variant properties (or *null* for the null
    variant); *label* names the variant (default: the hash label). The project's
    ``[variant]`` table supplies the namespace priorities. Backend
    output goes to *output* line by line when given, and its tail into the
    :class:`BuildError` of a failed build.
    """
    source_dir = Path(source_dir).absolute()
    out_dir = Path(out_dir).absolute()
    project = load_project_variant(source_dir)
    _check_request(properties, label, null, project, validate)

    with tempfile.TemporaryDirectory(prefix="wheelwise-build-") as tmp:
        plain = build_plain_wheel(
            source_dir, Path(tmp) / "wheel", isolation=isolation, output=output
        )
        created = not out_dir.exists()
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            # Written atomically: a temporary file beside the target, then a rename.
            return make_variant(
                plain,
                out_dir,
                properties=properties,
                label=label,
                null=null,
                # default-priorities.namespace and provider data from [variant].
                project=project,
                validate=validate,
            )
        except BaseException:
            if created:
                # Leave no empty output directory behind.
                with contextlib.suppress(OSError):
                    out_dir.rmdir()
            raise
