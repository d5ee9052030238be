"""Uploads: the legacy upload API that twine speaks, validated before publishing.

twine sends ``POST`` ``multipart/form-data`` with ``:action=file_upload``,
``name``, ``version``, ``sha256_digest`` (and ``blake2_256_digest``, metadata
fields...) and the file as the ``content`` part, authenticated with HTTP Basic:
username ``__token__``, the token as password.

An upload is refused with a 4xx status and a message that says why:

* 403: the server has no upload token (uploads are off);
* 401: no, malformed or wrong credentials;
* 400: not a wheel or sdist name (PEP 825 wheel filename grammar), ``name`` /
  ``version`` fields that disagree with the filename, a digest that does not
  match, a wheel that fails the archive checks or ``RECORD`` verification, whose
  METADATA names another project or version, whose ``variant.json`` does not
  describe its label, or whose variant metadata conflicts with the wheels
  already published for that version (PEP 825 "Metadata consistency"); an sdist
  that is not a gzip'd tar of ``{name}-{version}/`` with a ``PKG-INFO``;
* 409: a file of that name exists with other content (the same content: 200);
* 413: the request body is larger than the server's limit (8 GiB by default),
  counted as it arrives, so a chunked upload without Content-Length is cut off too.

The file is written under a hidden staging directory inside the served
directory, checked there, and hard-linked (or renamed) into place, so that it
appears whole and at once.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import shutil
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from packaging.utils import (
    InvalidSdistFilename,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from wheelwise.publish.consistency import merge_release
from wheelwise.publish.distfiles import SDIST, WHEEL, file_kind, read_dist, sha256_file
from wheelwise.publish.errors import UploadRejected
from wheelwise.publish.filecheck import UnsafeFile, check_sdist
from wheelwise.publish.live import LiveCatalog
from wheelwise.variants.errors import MetadataConflict, VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError

TOKEN_USER = "__token__"
STAGING_DIR = ".wheelwise-upload"
_CHUNK = 1 << 20


def check_credentials(authorization: str | None, token: str | None) -> None:
    """Raise UploadRejected unless *authorization* carries *token* (HTTP Basic)."""
    if token is None:
        raise UploadRejected(
            403, "uploads are disabled on this server (start it with --upload-token)"
        )
    how = f"use HTTP Basic authentication with username {TOKEN_USER} and the upload token"
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        raise UploadRejected(401, f"authentication required: {how}")
    try:
        user, sep, password = (
            base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        )
    except (binascii.Error, UnicodeDecodeError):
        raise UploadRejected(401, f"malformed Basic credentials: {how}") from None
    if not sep or user != TOKEN_USER:
        raise UploadRejected(401, f"unknown user {user!r}: {how}")
    if not hmac.compare_digest(password.encode(), token.encode()):
        raise UploadRejected(401, "invalid upload token")


@dataclass(frozen=True)
class Uploaded:
    filename: str
    project: str
    version: str
    # False: a file with the same name and content was already there.
    created: bool


def _bad(message: str) -> UploadRejected:
    return UploadRejected(400, message)


def _identify(filename: str) -> tuple[str, str, Version]:
    """(kind, project, version) from the name of an uploaded file."""
    if (
        not filename
        or "/" in filename
        or "\\" in filename
        or "\0" in filename
        or filename.startswith(".")
    ):
        raise _bad(f"invalid file name {filename!r}")
    kind = file_kind(filename)
    if kind == WHEEL:
        try:
            wheel = WheelFilename.parse(filename)
        except VariantError as exc:
            raise _bad(str(exc)) from None
        return kind, wheel.name, wheel.version
    if kind == SDIST:
        try:
            name, version = parse_sdist_filename(filename)
        except (InvalidSdistFilename, InvalidVersion) as exc:
            raise _bad(f"invalid sdist filename {filename!r}: {exc}") from None
        return kind, name, version
    raise _bad(f"{filename}: only wheels (.whl) and sdists (.tar.gz) can be uploaded")


def _check_fields(filename: str, fields: Mapping[str, str], project: str, version: Version) -> None:
    action = fields.get(":action")
    if action != "file_upload":
        raise _bad(f"unsupported :action {action!r} (only 'file_upload')")
    name, declared = fields.get("name"), fields.get("version")
    if not name or not declared:
        raise _bad("the form must have 'name' and 'version' fields")
    if canonicalize_name(name) != project:
        raise _bad(f"form field name={name!r} does not match the file {filename}")
    try:
        same = Version(declared) == version
    except InvalidVersion:
        same = False
    if not same:
        raise _bad(f"form field version={declared!r} does not match the file {filename}")
    if not fields.get("sha256_digest"):
        raise _bad("the form must have a 'sha256_digest' field")


def _receive(content: BinaryIO, target: Path, fields: Mapping[str, str]) -> str:
    """Copy the upload to *target*, check the declared digests; the sha256."""
    digests: dict[str, Any] = {"sha256_digest": hashlib.sha256()}
    if fields.get("blake2_256_digest"):
        digests["blake2_256_digest"] = hashlib.blake2b(digest_size=32)
    if fields.get("md5_digest"):
        digests["md5_digest"] = hashlib.md5(usedforsecurity=False)
    with target.open("wb") as out:
        while chunk := content.read(_CHUNK):
            out.write(chunk)
            for digest in digests.values():
                digest.update(chunk)
    for key, digest in digests.items():
        declared = fields[key].strip().lower()
        if not hmac.compare_digest(declared, digest.hexdigest()):
            raise _bad(
                f"{target.name}: {key} {declared} does not match the uploaded file "
                f"({digest.hexdigest()}); the upload was corrupted"
            )
    sha256: str = digests["sha256_digest"].hexdigest()
    return sha256


def store_upload(
    live: LiveCatalog,
    *,
    filename: str,
    fields: Mapping[str, str],
    content: BinaryIO,
    lock: threading.Lock,
) -> Uploaded:
    """Validate an upload and publish it in ``live.directory``; UploadRejected if not."""
    kind, project, version = _identify(filename)
    _check_fields(filename, fields, project, version)
    directory = live.directory
    staging = directory / STAGING_DIR / uuid.uuid4().hex
    staging.mkdir(parents=True)
    try:
        staged = staging / filename
        sha256 = _receive(content, staged, fields)
        new_variant = None
        if kind == SDIST:
            try:
                check_sdist(staged)
            except UnsafeFile as exc:
                raise _bad(str(exc)) from None
        if kind == WHEEL:
            try:
                read = read_dist(staged, sha256=sha256)
                with WheelArchive(staged) as archive:
                    archive.verify_record()
            except (WheelError, VariantError, ValueError) as exc:
                raise _bad(str(exc)) from None
            new_variant = read.dist.variant_metadata
        with lock:
            target = directory / filename
            if target.exists():
                if sha256_file(target) == sha256:
                    return Uploaded(filename, project, str(version), created=False)
                raise UploadRejected(
                    409, f"{filename} already exists with different content; files are immutable"
                )
            if new_variant is not None:
                _check_consistency(live, project, version, new_variant)
            _publish(staged, target, filename)
        live.refresh()
        return Uploaded(filename, project, str(version), created=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):  # another upload may be using it
            staging.parent.rmdir()


def _check_consistency(
    live: LiveCatalog, project: str, version: Version, new: VariantMetadata
) -> None:
    snapshot = live.refresh()
    entry = snapshot.catalog.projects.get(project)
    release = entry.release(version) if entry is not None else None
    if release is None:
        return
    published = [d.variant_metadata for d in release.files if d.is_variant]
    documents = [doc for doc in published if doc is not None]
    if not documents:
        return
    try:
        merge_release(project, str(version), [*documents, new])
    except MetadataConflict as exc:
        raise _bad(
            f"{new.source} conflicts with the wheels published for this version: {exc}"
        ) from None


def _publish(staged: Path, target: Path, filename: str) -> None:
    try:
        target.hardlink_to(staged)
    except FileExistsError:
        raise UploadRejected(409, f"{filename} was uploaded concurrently") from None
    except OSError:
        staged.rename(target)  # no hard links here; the lock keeps this race-free
