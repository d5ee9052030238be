"""Turn a variant wheel back into a non-variant wheel.

``strip_variant`` removes ``*.dist-info/variant.json`` and its RECORD row and the
label from the filename; the output is reproducible and written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.filename import wheel_filename
from wheelwise.wheels.make import VARIANT_JSON
from wheelwise.wheels.output import check_not_input, rewrite_output

if TYPE_CHECKING:
    from wheelwise.wheels.archive import WheelArchive


def strip_variant(wheel: Path, out_dir: Path, *, verify: bool = False) -> Path:
    """Write the non-variant wheel of *wheel* into *out_dir* and return its path;
    with *verify*, every member is checked against its RECORD hash first.

    Raises WheelError for a broken wheel or one that is not a variant wheel;
    then nothing is written.
    """
    wheel, out_dir = Path(wheel), Path(out_dir)
    filename = wheel_filename(wheel.name)
    target = out_dir / str(filename.without_variant())
    try:
        check_not_input(wheel, target)
    except WheelError:
        from wheelwise.wheels.archive import WheelArchive

        with WheelArchive(wheel, filename=filename) as archive:
            _variant_json(archive)  # a wheel that is no variant wheel says so first
        raise
    # Begun before the wheel is opened, as variant make's (an error leaves nothing).
    with rewrite_output(wheel, target) as output:
        # Imported while the kernel copies.
        from wheelwise.wheels.archive import WheelArchive
        from wheelwise.wheels.rewrite import rewrite_wheel

        with WheelArchive(wheel, filename=filename) as archive:
            if verify:
                archive.verify_record()  # else the rewrite checks the sizes as it copies
            name = _variant_json(archive)
            rewrite_wheel(archive, target, drop={name}, verified=verify, output=output)
    return target


def _variant_json(archive: WheelArchive) -> str:
    """The path of *archive*'s variant.json, checked; WheelError when the archive is
    not a variant wheel."""
    name = archive.dist_info_path(VARIANT_JSON)
    archive.variant_metadata()  # a broken variant.json is an error here too
    if archive.filename.variant_label is None and name not in archive:
        raise WheelError(
            f"{archive.path.name} is not a variant wheel (no variant label, no "
            f"{name}): nothing to strip"
        )
    return name
