"""Checking a downloaded wheel against the PEP 658 metadata it was resolved with.

PEP 658 says the metadata file an index serves is the wheel's own ``METADATA``. The
resolver trusts it (dependencies, ``Requires-Python``) without opening the wheel, so
an index whose metadata file disagrees with the wheel would install something the
resolution never saw: once the wheel is downloaded, the fields the resolution used
must agree, or nothing is installed.
"""

from __future__ import annotations

import email.message
import email.parser
import email.policy

from packaging.utils import canonicalize_name, canonicalize_version

from wheelwise.install.errors import InstallError

__all__ = ["CoreMetadataMismatch", "check_core_metadata"]


class CoreMetadataMismatch(InstallError):
    """The index's metadata file (PEP 658) disagrees with the wheel's ``METADATA``."""


def _fields(metadata: bytes) -> dict[str, object]:
    message: email.message.Message = email.parser.BytesParser(
        policy=email.policy.compat32
    ).parsebytes(metadata, headersonly=True)
    requires = sorted(str(v).strip() for v in message.get_all("Requires-Dist") or [])
    return {
        "Name": canonicalize_name(str(message.get("Name", ""))),
        "Version": canonicalize_version(str(message.get("Version", ""))),
        "Requires-Python": str(message.get("Requires-Python", "")).strip(),
        "Requires-Dist": requires,
    }


def check_core_metadata(url: str, served: bytes, wheel_name: str, own: bytes) -> None:
    """Raise :class:`CoreMetadataMismatch` when *served* (the metadata file at *url*)
    and *own* (the ``METADATA`` of the wheel *wheel_name*) disagree on a field that
    resolution reads."""
    expected, actual = _fields(served), _fields(own)
    differ = [key for key in expected if expected[key] != actual[key]]
    if differ:
        raise CoreMetadataMismatch(
            f"{url}: the index's core metadata (PEP 658) disagrees with the METADATA of "
            f"{wheel_name} on {', '.join(differ)}: the index serves a wrong metadata file; "
            "refusing to install (nothing was installed): report it to the index"
        )
