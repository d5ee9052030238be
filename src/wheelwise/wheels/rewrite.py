"""Write a changed copy of a wheel, reproducibly and atomically.

The copy keeps every member, and every folder entry (which RECORD does not list),
in archive order with its original timestamp, compression method and attributes
(extra fields and comments are not copied); a replaced member keeps its place and
attributes and only its bytes change.
Added members get a fixed timestamp (the newest copied member's) and mode 0644,
and go after the copied ones; ``RECORD`` is written last, with a row per member in
archive order (sha256 for the members written anew). A wheel on disk is copied with
its members' compressed bytes as they are (:mod:`wheelwise.wheels.zip_copy`, ZIP64
records where a size or offset needs them), their RECORD rows kept as they were
written; one in memory is
inflated and deflated again through :mod:`zipfile`. Nothing in the output depends on
the clock, so the same input gives byte-identical output. The output is written to a temporary file
beside the target and renamed over it only when complete.
"""

from __future__ import annotations

import stat
import zipfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from wheelwise.wheels.archive import SIGNATURES, WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.output import atomic_write
from wheelwise.wheels.record import (
    RecordEntry,
    RecordHasher,
    RecordRow,
    file_entry,
    write_record,
)
from wheelwise.wheels.zip_copy import CompressedCopyWriter, Deflating

# Used for added members when nothing is copied (never the case for a real wheel).
DEFAULT_DATE_TIME = (1980, 1, 1, 0, 0, 0)
NEW_MEMBER_MODE = 0o644
# Signatures over RECORD: invalid once RECORD changes, so they are not copied.
SIGNATURE_FILES = tuple(f"RECORD.{ext}" for ext in SIGNATURES)
_UNIX = 3  # ZipInfo.create_system for Unix (external_attr holds the st_mode)


def _copied_info(source: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(source.filename, date_time=source.date_time)
    info.compress_type = source.compress_type
    info.external_attr = source.external_attr
    info.create_system = source.create_system
    # The declared size decides whether the entry needs ZIP64 headers.
    info.file_size = source.file_size
    return info


def _new_info(name: str, date_time: tuple[int, int, int, int, int, int]) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=date_time)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | NEW_MEMBER_MODE) << 16
    info.create_system = _UNIX
    return info


def _unchanged_start(archive: WheelArchive, changed: Collection[str]) -> int:
    """Where the first member of *changed* (left out or replaced) starts in *archive*:
    the bytes before it are likely copied as they are. The last entry's start
    when none is there."""
    starts = [info.header_offset for info in archive.entries if info.filename in changed]
    return min(starts, default=max((info.header_offset for info in archive.entries), default=0))


def rewrite_wheel(
    archive: WheelArchive,
    target: Path,
    *,
    drop: Collection[str] = (),
    add: Sequence[tuple[str, bytes]] = (),
    replace: Mapping[str, bytes] | None = None,
    verified: bool = False,
    output: CompressedCopyWriter | None = None,
) -> Path:
    """Write *archive* to *target* without the members *drop*, with the members named
    in *replace* holding its bytes instead (in their place, with their attributes),
    and with *add* appended.

    ``RECORD`` is rewritten; signature files over it are left out. Unless the caller
    has *verified* the archive (``verify_record()``), it is checked here: members
    copied as they are keep their RECORD rows, so RECORD must list each at its size
    (a damaged member stays as detectable as it was); members inflated and written
    again get new rows, so each must match its hash first.

    *output*, from :func:`~wheelwise.wheels.output.rewrite_output` for this
    archive's file and *target*, is written into instead of a new file (the
    caller's block then commits it).
    """
    replace = replace or {}
    record_name = archive.dist_info_path("RECORD")
    if record_name not in archive:
        archive.record()  # says the wheel has no RECORD, as a check of it would
    skipped = {record_name, *(archive.dist_info_path(name) for name in SIGNATURE_FILES), *drop}
    # Folder entries stay too, in their place: a wheel's members then go to the
    # kernel in one run (:meth:`CompressedCopyWriter.copy_verbatim`).
    entries = [info for info in archive.entries if info.filename not in skipped]
    kept = [info.filename for info in entries if not info.is_dir()]
    clashes = sorted({name for name, _ in add} & set(kept))
    if clashes:
        raise WheelError(f"{archive.path.name}: already has {', '.join(clashes)}")
    absent = sorted(set(replace) - set(kept))
    if absent:
        raise WheelError(f"{archive.path.name}: has no member {', '.join(absent)} to replace")
    date_time = max((archive.info(name).date_time for name in kept), default=DEFAULT_DATE_TIME)
    record_info = _copied_info(archive.info(record_name))

    def write(stream: BinaryIO) -> None:
        listed: list[RecordEntry] = []
        with zipfile.ZipFile(stream, "w") as out:
            for entry in entries:
                name, info = entry.filename, _copied_info(entry)
                chunks: Iterable[bytes] = archive.iter_chunks(entry)
                if entry.is_dir():
                    with out.open(info, "w") as folder:
                        for chunk in chunks:
                            folder.write(chunk)
                    continue
                if name in replace:
                    chunks = (replace[name],)
                    info.file_size = len(replace[name])
                hasher = RecordHasher(name)
                with out.open(info, "w") as member:
                    for chunk in chunks:
                        hasher.update(chunk)
                        member.write(chunk)
                listed.append(hasher.entry())
            for name, data in add:
                out.writestr(_new_info(name, date_time), data)
                listed.append(file_entry(name, data))
            out.writestr(record_info, write_record(listed, record_path=record_name))

    refused: list[WheelError] = []  # RECORD's own check (copy): told as it is

    def copy(stream: BinaryIO) -> None:
        out = CompressedCopyWriter(stream)
        try:
            if entries and entries[0].filename not in replace:
                # The kernel copies the members before the first change while they
                # are checked (and RECORD is read).
                start = _unchanged_start(archive, {*skipped, *replace})
                out.copy_ahead(entries[0], archive.fileno(), start)
            copy_into(out)
        finally:
            out.stop()

    def copy_into(out: CompressedCopyWriter) -> None:
        source = archive.fileno()
        if not verified:
            try:
                archive.check_record_sizes()
            except WheelError as exc:
                refused.append(exc)
                raise
        # The verified RECORD rows of members copied as they are stay true, as written.
        rows = archive.record_rows()
        listed: list[RecordEntry | RecordRow] = [
            file_entry(entry.filename, replace[entry.filename])
            if entry.filename in replace
            else rows[entry.filename]
            for entry in entries
            if not entry.is_dir()
        ]
        listed += [file_entry(name, data) for name, data in add]
        record = write_record(listed, record_path=record_name)
        # Deflated while the members are copied.
        deflated = Deflating(record) if record_info.compress_type == zipfile.ZIP_DEFLATED else None
        for entry in entries:
            name = entry.filename
            if name in replace:
                out.add(_copied_info(entry), replace[name])
            elif not out.copy_verbatim(entry, source):
                out.copy(entry, archive.compressed_chunks(entry))
        for name, data in add:
            out.add(_new_info(name, date_time), data)
        out.add(record_info, record, deflated)
        out.close()

    copying = archive.on_disk
    if not verified and not copying:
        archive.verify_record()
    try:
        if output is not None:
            assert copying, "an output made ahead is for a wheel file"
            copy_into(output)
        else:
            atomic_write(target, copy if copying else write)
    except ValueError as exc:
        if refused:
            raise refused[0] from None  # a member whose bytes are not what its entry says
        raise WheelError(
            f"{archive.path.name}: cannot copy it ({exc}): the archive is damaged; "
            "re-download or rebuild it"
        ) from None
    return target
