"""Turn a wheel into a variant wheel (PEP 825).

``make_variant`` adds ``*.dist-info/variant.json`` (canonical PEP 825 0.1.1, or
PEP 850 v0.2.0 when the project gives provider information, see
:mod:`wheelwise.variants.providers_format`), rewrites ``RECORD`` and names the
output with the variant label. Without a label, the label is variantlib's 8-hex
hash of the properties. The output is reproducible (see
:mod:`wheelwise.wheels.rewrite`) and written atomically; the input wheel is
verified against its RECORD first and never overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from wheelwise.variants.errors import InvalidLabel, InvalidMetadata, InvalidProperty
from wheelwise.variants.labels import NULL_LABEL, hash_label, property_map, validate_label
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.filename import wheel_filename
from wheelwise.wheels.output import check_not_input, rewrite_output

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.wheels.archive import WheelArchive

VARIANT_JSON = "variant.json"


def choose_label(
    properties: Sequence[VariantProperty], label: str | None = None, *, null: bool = False
) -> str:
    """The label of a variant with *properties*: *label*, ``null`` or the hash label."""
    if label == NULL_LABEL:
        null = True
    if null:
        if properties:
            raise InvalidProperty(
                f"the null variant has no properties, got {', '.join(str(p) for p in properties)}"
            )
        if label not in (None, NULL_LABEL):
            raise InvalidLabel(f"the null variant's label is 'null', not {label!r}")
        return NULL_LABEL
    if not properties:
        raise InvalidProperty(
            "no variant properties given: give at least one 'namespace :: feature :: value', "
            "or make the null variant"
        )
    if label is None:
        return hash_label(properties)
    return validate_label(label)


def variant_metadata(
    properties: Iterable[VariantProperty],
    label: str,
    *,
    namespaces: Sequence[str] | None = None,
    project: VariantMetadata | None = None,
    source: str = "variant.json",
) -> VariantMetadata:
    """The metadata of one wheel: *label* mapped to *properties*.

    ``default-priorities.namespace`` is *namespaces*, else the project's, else the
    namespaces the properties use, sorted. It must list every namespace used. The
    project's provider information (providers, static properties, feature and
    property priorities) is kept: installers need it to select the wheel.
    """
    from wheelwise.variants.metadata import VariantMetadata

    properties = sorted(set(properties))
    used = sorted({prop.namespace for prop in properties})
    if namespaces is not None:
        order, origin = list(namespaces), "the namespaces given"
    elif project is not None:
        order, origin = list(project.namespaces), f"{project.source} default-priorities.namespace"
    else:
        order, origin = used, ""
    if not order:
        raise InvalidMetadata(
            f"{source}: default-priorities.namespace would be empty; PEP 825 needs at least "
            "one namespace: give the namespaces (--namespaces) or a project (--pyproject)"
        )
    missing = [ns for ns in used if ns not in order]
    if missing:
        raise InvalidMetadata(
            f"{source}: namespace(s) {', '.join(missing)} used by the properties are not "
            f"listed in {origin} ({', '.join(order)}); add them"
        )
    metadata = VariantMetadata.build(order, {label: property_map(properties)}, source=source)
    if project is None:
        return metadata
    return replace(
        metadata,
        providers=dict(project.providers),
        static_properties=dict(project.static_properties),
        feature_priorities=dict(project.feature_priorities),
        property_priorities=dict(project.property_priorities),
    )


def _check_existing(archive: WheelArchive, label: str, metadata: VariantMetadata) -> None:
    """An input that already is a variant wheel must carry exactly the new data."""
    old_label = archive.filename.variant_label
    old = archive.variant_metadata()
    if old_label is None and old is None:
        return
    if (
        old_label == label
        and old is not None
        and old.variants == metadata.variants
        and old.namespaces == metadata.namespaces
    ):
        return
    if old_label is not None:
        what = f"label {old_label!r}"
        if old is not None and old_label in old.variants:
            props = ", ".join(str(p) for p in old.properties(old_label)) or "no properties"
            what += f": {props}"
    else:
        what = f"it has {archive.dist_info_path(VARIANT_JSON)}"
    raise WheelError(
        f"{archive.path.name} is already a variant wheel ({what}); strip it first "
        "(wheelwise variant strip) to give it other variant data"
    )


def make_variant(
    wheel: Path,
    out_dir: Path,
    *,
    properties: Sequence[VariantProperty],
    label: str | None = None,
    null: bool = False,
    namespaces: Sequence[str] | None = None,
    project: VariantMetadata | None = None,
    validate: bool = True,
    verify: bool = False,
) -> Path:
    """Write the variant wheel of *wheel* into *out_dir* and return its path.

    *properties* map to *label* (default: the 8-hex property hash); *null* makes
    the null variant (no properties, label ``null``). *namespaces* is
    ``default-priorities.namespace`` (default: *project*'s, else the namespaces
    used, sorted); *project*'s provider information is written too (PEP 850
    v0.2.0, see :mod:`wheelwise.variants.providers_format`). With *validate*, the
    properties are checked against the built-in providers. With *verify*, every
    member is checked against its RECORD hash first; otherwise members are copied
    as they are with their RECORD rows (see :func:`rewrite_wheel`).

    Raises VariantError for bad variant data and WheelError for a bad input wheel;
    then nothing is written.
    """
    wheel, out_dir = Path(wheel), Path(out_dir)
    properties = sorted(set(properties))
    label = choose_label(properties, label, null=null)
    filename = wheel_filename(wheel.name)
    target = out_dir / str(filename.with_variant(label))

    def checked_metadata() -> VariantMetadata:
        from wheelwise.wheels.validate import validate_properties

        if validate:
            validate_properties(properties)
        source = f"variant.json for {wheel.name}"
        return variant_metadata(
            properties, label, namespaces=namespaces, project=project, source=source
        )

    try:
        check_not_input(wheel, target)
    except WheelError:
        from wheelwise.wheels.archive import WheelArchive

        metadata = checked_metadata()
        with WheelArchive(wheel, filename=filename) as archive:
            _check_existing(archive, label, metadata)  # which says more, where it fails
        raise
    # The output is begun (the kernel copying the wheel into it) before the wheel is
    # opened, and before what reads it is imported: an error below leaves nothing.
    with rewrite_output(wheel, target) as output:
        from wheelwise.variants.providers_format import metadata_bytes
        from wheelwise.wheels.archive import WheelArchive
        from wheelwise.wheels.rewrite import rewrite_wheel

        metadata = checked_metadata()
        data = metadata_bytes(metadata)
        with WheelArchive(wheel, filename=filename) as archive:
            if verify:
                archive.verify_record()  # else the rewrite checks the sizes as it copies
            _check_existing(archive, label, metadata)
            name = archive.dist_info_path(VARIANT_JSON)
            rewrite_wheel(
                archive, target, drop={name}, add=[(name, data)], verified=verify, output=output
            )
    return target
