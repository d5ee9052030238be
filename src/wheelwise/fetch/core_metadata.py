"""Checking a downloaded wheel against the PEP 658 metadata it was resolved with.

PEP 658 says the metadata file an index serves is the wheel's own ``METADATA``. The
resolver trusts it (dependencies, ``Requires-Python``) without opening the wheel, so
an index whose metadata file disagrees with the wheel would install something the
resolution never saw: once the wheel is downloaded, the fields the resolution used
must agree, or nothing is installed.
"""

from __future__ import annotations

from packaging.utils import canonicalize_name, canonicalize_version

from wheelwise.models.errors import InstallError
from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata

__all__ = ["CoreMetadataMismatch", "check_core_metadata"]


class CoreMetadataMismatch(InstallError):
    """The index's metadata file (PEP 658) disagrees with the wheel's ``METADATA``."""


def _fields(metadata: bytes) -> dict[str, object]:
    try:
        fields = read_core_metadata(metadata, body=False)
    except CoreMetadataError:  # compared as a file without any field: a mismatch
        return {"Name": "", "Version": "", "Requires-Python": "", "Requires-Dist": []}
    return {
        "Name": canonicalize_name(fields.first("Name") or ""),
        "Version": canonicalize_version(fields.first("Version") or ""),
        "Requires-Python": fields.first("Requires-Python") or "",
        "Requires-Dist": sorted(fields.requires_dist),
    }


def check_core_metadata(url: str, served: bytes, wheel_name: str, own: bytes) -> None:
    """Raise :class:`CoreMetadataMismatch` when *served* (the metadata file at *url*)
    and *own* (the ``METADATA`` of the wheel *wheel_name*) disagree on a field that
    resolution reads."""
    if served == own:  # what PEP 658 asks for, and what indexes serve: nothing to parse
        return
    expected, actual = _fields(served), _fields(own)
    differ = [key for key in expected if expected[key] != actual[key]]
    if differ:
        raise CoreMetadataMismatch(
            f"{url}: the index's core metadata (PEP 658) disagrees with the METADATA of "
            f"{wheel_name} on {', '.join(differ)}: the index serves a wrong metadata file; "
            "refusing to install (nothing was installed): report it to the index"
        )
