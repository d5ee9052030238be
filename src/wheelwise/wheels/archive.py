"""Safe, read-only access to a wheel archive.

Opening a wheel checks its structure before anything is read: member names that
escape the archive (absolute paths, ``..``, backslashes, drive letters),
duplicate members, symbolic links, entries whose declared size or compression
ratio is bomb-like, and a missing or ambiguous ``.dist-info`` directory are all
errors. Reads are bounded by the declared size, so a lying header cannot inflate
past it. ``verify_record()`` checks every member against ``RECORD``.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Container, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from wheelwise.forked_map import cores
from wheelwise.policy.hashes import is_trusted
from wheelwise.userfiles import NotARegularFile, open_regular_zip
from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.wheels.errors import WheelError, describe
from wheelwise.wheels.filename import wheel_filename
from wheelwise.wheels.zip_layout import FLAG_ENCRYPTED

if TYPE_CHECKING:
    from installer.records import RecordEntry

    # loaded by the first wheel that has a variant.json
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.wheels.members import MemberReader
    from wheelwise.wheels.record import RecordRow

# One member above this is refused (real wheels' largest members are shared
# libraries of a few GiB at most).
MAX_MEMBER_BYTES = 8 << 30
# A member that inflates more than this many times and to more than a few MiB is
# treated as a decompression bomb.
MAX_COMPRESSION_RATIO = 200
BOMB_MIN_BYTES = 8 << 20
MAX_METADATA_BYTES = 16 << 20
# The binary distribution format forbids md5 and sha1 in RECORD.
_CHUNK = 1 << 20
# Members up to this size are read (and inflated) whole when they are checked.
_WHOLE_MEMBER = 4 << 20
# A wheel with this much to inflate is checked by threads (docs/benchmarks.md:
# `variant make` of the torch wheel).
_PARALLEL_BYTES = 64 << 20
_VERIFY_THREADS = 4
# Signatures over RECORD (``RECORD.jws``, ``RECORD.p7s``): the only members RECORD
# need not list besides itself.
SIGNATURES = ("jws", "p7s")
# What zipfile lets through from a damaged or crafted archive, besides BadZipFile:
# a corrupt deflate/lzma stream (zlib.error, LZMAError; bz2 raises OSError), a name
# flagged UTF-8 that is not (UnicodeDecodeError, a ValueError), a "version needed
# to extract" or compression it does not know (NotImplementedError), an encrypted
# member (RuntimeError), truncated or out-of-range fields (EOFError, struct.error,
# OverflowError, ValueError) and ZIP64 where it is off (LargeZipFile).
_DAMAGED: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    RuntimeError,
    struct.error,
    OverflowError,
    ValueError,
    OSError,
)
try:
    from lzma import LZMAError
except ImportError:  # a Python built without lzma reads no lzma members at all
    pass
else:
    _DAMAGED += (LZMAError,)
_HINT = "re-download or rebuild it"
# Compression methods zipfile reads (wheels use the first two).
_METHODS = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)


def member_problem(
    name: str,
    *,
    seen: Container[str],
    external_attr: int,
    compress_type: int,
    flag_bits: int,
    file_size: int,
    compress_size: int,
) -> str | None:
    """Why the member *name*, as its directory entry describes it, makes the wheel
    unsafe or unreadable, *seen* holding the file names before it; None when nothing
    does. One set of rules for every reader of a wheel's directory."""
    reason = _unsafe_name(name)
    if reason is not None:
        return f"unsafe member name {name!r} ({reason}); refusing the wheel"
    if name in seen:
        return f"duplicate member {name!r}; refusing the wheel"
    if stat.S_ISLNK(external_attr >> 16):
        return f"member {name!r} is a symbolic link; refusing the wheel"
    # Checked here, not when read: an installer reads members without this class.
    if compress_type not in _METHODS:
        return (
            f"member {name!r} uses compression method {compress_type}, which "
            f"zip readers do not support; {_HINT}"
        )
    if flag_bits & FLAG_ENCRYPTED:
        return f"member {name!r} is encrypted; refusing the wheel"
    if file_size > MAX_MEMBER_BYTES:
        return (
            f"member {name!r} declares {file_size} bytes (limit {MAX_MEMBER_BYTES}); "
            "refusing the wheel"
        )
    if file_size > BOMB_MIN_BYTES and file_size > MAX_COMPRESSION_RATIO * max(compress_size, 1):
        return (
            f"member {name!r} inflates {file_size // max(compress_size, 1)}x "
            f"({compress_size} -> {file_size} bytes): a decompression bomb? refusing the wheel"
        )
    return None


def dist_info_dirs(files: Iterable[str]) -> list[str]:
    """The top-level ``.dist-info`` directories among the member *files* (not
    directory entries), sorted: a wheel has exactly one."""
    tops = {name.split("/", 1)[0] for name in files if "/" in name}
    return sorted(top for top in tops if top.endswith(".dist-info"))


def zip_member_problem(info: zipfile.ZipInfo, seen: Container[str]) -> str | None:
    """:func:`member_problem` of the member *info* describes."""
    return member_problem(
        info.filename,
        seen=seen,
        external_attr=info.external_attr,
        compress_type=info.compress_type,
        flag_bits=info.flag_bits,
        file_size=info.file_size,
        compress_size=info.compress_size,
    )


def check_listing(
    members: Iterable[str], record: Iterable[RecordEntry], record_name: str
) -> dict[str, RecordEntry]:
    """The entries of *record* (the wheel's ``RECORD``, the member *record_name*) by
    path, once they list the same files as the archive's *members*, each with a
    strong hash; raises WheelError. One rule for every reader of a wheel."""
    # The binary distribution format lets only these go unlisted (a RECORD.pth
    # or RECORD.anything else is a file like any other).
    signatures = {f"{record_name}.{ext}" for ext in SIGNATURES}
    entries = {entry.path: entry for entry in record}
    present = set()
    for name in members:
        present.add(name)
        entry = entries.get(name)
        if name == record_name or (name in signatures and entry is None):
            continue  # RECORD itself, and its signatures
        if entry is None:
            raise WheelError(f"member {name!r} is not listed in RECORD")
        if entry.hash_ is None:
            raise WheelError(f"RECORD has no hash for {name!r}")
        if not is_trusted(entry.hash_.name):
            raise WheelError(
                f"RECORD hashes {name!r} with {entry.hash_.name}; the wheel format needs "
                "sha256 or stronger"
            )
    missing = sorted(set(entries) - present)
    if missing:
        raise WheelError(f"RECORD lists missing members: {', '.join(missing[:5])}")
    return entries


def dist_info_problem(dist_info: str, wheel_name: str) -> str | None:
    """Why the ``.dist-info`` folder *dist_info* cannot be the one of the wheel file
    *wheel_name*, or None."""
    from packaging.utils import canonicalize_name

    distribution = wheel_name.split("-", 1)[0]  # never holds a dash (escaped)
    project = dist_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    if canonicalize_name(project) != canonicalize_name(distribution):
        return f"its {dist_info} directory does not match the file name"
    return None


def _unsafe_name(name: str) -> str | None:
    """Why *name* may not be extracted, or None."""
    if not name or name.startswith("/"):
        return "absolute path"
    if "\\" in name:
        return "backslash in the name"
    if len(name) > 1 and name[1] == ":":
        return "drive-letter path"
    padded = f"/{name}/"  # a '.' or '..' component is one between two slashes
    if "/../" in padded or "/./" in padded:
        return "path with '.' or '..' components"
    if "\0" in name:
        return "NUL in the name"
    return None


class InMemoryWheel:
    """A wheel file's bytes, with its file name (a small download never written to
    disk). ``path`` is just the name, for messages."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self.data = data
        self.path = Path(name)

    def __repr__(self) -> str:
        return f"InMemoryWheel({self.name!r}, {len(self.data)} bytes)"


def open_zip(wheel: str | Path | InMemoryWheel) -> zipfile.ZipFile:
    """A :class:`zipfile.ZipFile` over a wheel file or an in-memory wheel."""
    if isinstance(wheel, InMemoryWheel):
        archive = zipfile.ZipFile(io.BytesIO(wheel.data))
        archive.filename = wheel.name  # readers (installer) take the wheel's name from it
        return archive
    return open_regular_zip(wheel)


class WheelArchive:
    """A wheel file opened for reading after its structure has been checked."""

    def __init__(
        self,
        path: str | Path | InMemoryWheel,
        *,
        name: str | None = None,
        filename: WheelFilename | None = None,
    ) -> None:
        """*name*: the wheel's file name, where the file on disk has another one;
        *filename*: that name parsed, where the caller has parsed it already."""
        self.path = path.path if isinstance(path, InMemoryWheel) else Path(path)
        if filename is not None:
            self.filename = filename
        else:
            self.filename = wheel_filename(name if name is not None else self.path.name)
        self._detached = False
        self._record: list[RecordEntry] | None = None
        self._record_rows: list[RecordRow] = []
        self._sizes_checked = False
        try:
            self._zip = open_zip(path)
        except FileNotFoundError:
            raise WheelError(f"{self.path}: no such file") from None
        except WheelError:
            raise
        except NotARegularFile as exc:
            raise WheelError(f"{self.path}: {exc.strerror}") from None
        except OSError as exc:  # the file, not its contents: no point re-downloading
            raise WheelError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise WheelError(
                f"{self.path}: not a valid wheel (zip) archive: a member name is not valid "
                f"UTF-8 although flagged so; {_HINT}"
            ) from None
        except NotImplementedError as exc:
            raise WheelError(
                f"{self.path}: not a valid wheel (zip) archive: it needs zip features no "
                f"wheel uses ({describe(exc)}); {_HINT}"
            ) from None
        except _DAMAGED as exc:
            raise WheelError(
                f"{self.path}: not a valid wheel (zip) archive ({describe(exc)}); {_HINT}"
            ) from None
        try:
            self._members = self._check_members()
            self.dist_info = self._find_dist_info()
        except Exception:
            self._zip.close()
            raise

    # -- context manager ---------------------------------------------------------

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if not self._detached:
            self._zip.close()

    def detach(self) -> zipfile.ZipFile:
        """The open zip, now the caller's to close (:meth:`close` leaves it open):
        an installer reuses the directory this archive parsed."""
        self._detached = True
        return self._zip

    # -- structure ---------------------------------------------------------------

    def _fail(self, message: str) -> WheelError:
        return WheelError(f"{self.path.name}: {message}")

    def _check_members(self) -> dict[str, zipfile.ZipInfo]:
        members: dict[str, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            name = info.filename
            # Files only in *members*: a directory entry may repeat.
            problem = zip_member_problem(info, members)
            if problem is not None:
                raise self._fail(problem)
            if not name.endswith("/"):
                members[name] = info
        return members

    def _find_dist_info(self) -> str:
        dist_infos = dist_info_dirs(self._members)
        if not dist_infos:
            raise self._fail("no .dist-info directory: not a wheel")
        if len(dist_infos) > 1:
            raise self._fail(f"several .dist-info directories: {', '.join(map(repr, dist_infos))}")
        return dist_infos[0]

    @property
    def names(self) -> list[str]:
        """Member file names, in archive order."""
        return list(self._members)

    def info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._members[name]
        except KeyError:
            raise self._fail(f"no member {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._members

    # -- reading -----------------------------------------------------------------

    @property
    def entries(self) -> list[zipfile.ZipInfo]:
        """Every entry of the directory in archive order: the members and the folder
        entries (which name no file and which RECORD does not list)."""
        return self._zip.infolist()

    def _entry(self, member: str | zipfile.ZipInfo) -> tuple[str, zipfile.ZipInfo]:
        if isinstance(member, zipfile.ZipInfo):
            return member.filename, member
        return member, self.info(member)

    def iter_chunks(self, member: str | zipfile.ZipInfo) -> Iterator[bytes]:
        """The bytes of a member (or a folder entry of :attr:`entries`) in chunks,
        never more than its declared size."""
        name, info = self._entry(member)
        remaining = info.file_size
        try:
            with self._zip.open(info) as stream:
                while True:
                    chunk = stream.read(min(_CHUNK, remaining + 1))
                    if not chunk:
                        return
                    remaining -= len(chunk)
                    if remaining < 0:
                        raise self._fail(f"member {name!r} is larger than its header says")
                    yield chunk
        except WheelError:
            raise
        except _DAMAGED as exc:
            raise self._fail(
                f"cannot read member {name!r} ({describe(exc)}): the archive is damaged; {_HINT}"
            ) from None

    @property
    def on_disk(self) -> bool:
        """Whether the wheel is a file (not held in memory): :meth:`compressed_chunks`
        needs one."""
        return self._zip.fp is not None and not isinstance(self._zip.fp, io.BytesIO)

    def fileno(self) -> int:
        """The wheel's file descriptor (an archive :attr:`on_disk`)."""
        assert self._zip.fp is not None, "an archive in memory has no file"
        return self._zip.fp.fileno()

    def compressed_chunks(self, member: str | zipfile.ZipInfo) -> Iterator[bytes]:
        """The bytes of a member (or a folder entry of :attr:`entries`) as the archive
        stores them (compressed), in chunks, its local header checked first. Nothing
        is inflated, so nothing is checked against the CRC: callers have verified the
        member (``verify_record``)."""
        from wheelwise.wheels.members import MemberReader

        name, info = self._entry(member)
        descriptor = self.fileno()
        try:
            position = MemberReader(self._zip).data_offset(info)
        except zipfile.BadZipFile as exc:
            raise self._fail(f"cannot read member {name!r} ({exc}); {_HINT}") from None
        remaining = info.compress_size
        while remaining > 0:
            chunk = os.pread(descriptor, min(_CHUNK, remaining), position)
            if not chunk:
                raise self._fail(f"member {name!r} is truncated; {_HINT}")
            position += len(chunk)
            remaining -= len(chunk)
            yield chunk

    def read(self, name: str, *, limit: int = MAX_METADATA_BYTES) -> bytes:
        """A whole member; refused above *limit* bytes (metadata files are small)."""
        size = self.info(name).file_size
        if size > limit:
            raise self._fail(f"member {name!r} is {size} bytes (limit {limit}); refusing it")
        return b"".join(self.iter_chunks(name))

    def dist_info_path(self, filename: str) -> str:
        return f"{self.dist_info}/{filename}"

    def metadata(self) -> bytes:
        """The core metadata file (``METADATA``), as bytes."""
        return self.read(self.dist_info_path("METADATA"))

    def check_dist_info_files(self) -> None:
        """``WHEEL`` is there and says a 1.x wheel, and ``entry_points.txt``, if
        there, parses as installer reads it: what installer would otherwise fail on
        halfway through an install, with its own exception's words. Raises
        WheelError."""
        from configparser import Error as ConfigError

        from installer.utils import parse_entrypoints, parse_metadata_file

        name = self.dist_info_path("WHEEL")
        if name not in self:
            raise self._fail(f"no {name}: not a valid wheel")
        version = parse_metadata_file(self._text(name)).get("Wheel-Version")
        if version is None or str(version).split(".")[0].strip() != "1":
            raise self._fail(f"{name} says Wheel-Version {version}: only 1.x wheels install")
        name = self.dist_info_path("entry_points.txt")
        if name in self:
            try:
                list(parse_entrypoints(self._text(name)))
            except (ConfigError, AssertionError, ValueError) as exc:
                reason = (str(exc).splitlines() or ["not an entry point"])[0]
                raise self._fail(f"{name} cannot be read ({reason})") from None

    def _text(self, name: str) -> str:
        try:
            return self.read(name).decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail(f"{name} is not UTF-8 text") from None

    def variant_metadata(self) -> VariantMetadata | None:
        """``*.dist-info/variant.json``, or None when the wheel has none."""
        name = self.dist_info_path("variant.json")
        if name not in self:
            return None
        from wheelwise.variants.metadata import VariantMetadata

        try:
            return VariantMetadata.from_json(self.read(name), source=f"{self.path.name}!{name}")
        except VariantError as exc:
            raise WheelError(str(exc)) from None

    def record(self) -> list[RecordEntry]:
        """The entries of ``RECORD`` (read once: a big wheel's has 10,000s of rows)."""
        if self._record is None:
            name = self.dist_info_path("RECORD")
            if name not in self:
                raise self._fail(f"no {name}: not a valid wheel")
            data = self.read(name)
            # Imported here: reading a wheel's metadata (index build) never loads installer.
            from wheelwise.wheels.record import parse_record_rows, record_entries

            try:
                rows = parse_record_rows(data, name=name)
                self._record = record_entries(rows, name=name)
            except WheelError as exc:
                raise self._fail(str(exc)) from None
            self._record_rows = rows
        return list(self._record)

    def record_rows(self) -> dict[str, RecordRow]:
        """``RECORD``'s rows as they are written, by path (each checked as
        :meth:`record` checks it): a rewrite keeps the rows of the members it copies."""
        self.record()
        return {row[0]: row for row in self._record_rows}

    def check_record_listing(self) -> dict[str, RecordEntry]:
        """RECORD and the archive list the same files, each with a strong hash
        (:func:`check_listing`).

        Reads no member contents: a caller that reads every member anyway (an
        installer) checks each one against the returned entries as it goes.
        """
        record = self.record()  # its errors name the wheel already
        try:
            return check_listing(self._members, record, self.dist_info_path("RECORD"))
        except WheelError as exc:
            raise self._fail(str(exc)) from None

    def check_record_sizes(self) -> None:
        """RECORD lists every member at the size the archive gives it (as
        :meth:`check_record_listing`, and reading no member contents)."""
        if self._sizes_checked:
            return
        members = self._members  # each listed (the listing is checked first)
        for name, entry in self.check_record_listing().items():
            if entry.size is not None and entry.size != members[name].file_size:
                raise self.mismatch(name)
        self._sizes_checked = True

    def verify_record(self) -> None:
        """Every member is listed in RECORD with a matching hash and size.

        Members are read by :class:`~wheelwise.wheels.members.MemberReader` (small
        ones whole, large ones in chunks straight from the file), each byte hashed
        once; a big wheel's members by a few threads, the largest first (inflating
        and hashing release the interpreter). The member reported is the first, in
        archive order, that does not match."""
        from wheelwise.wheels.members import MemberReader
        from wheelwise.wheels.record import encode_digest

        entries = self.check_record_listing()
        fp = self._zip.fp
        # An in-memory wheel's bytes: a copy (a view would pin the stream's buffer
        # until every reference to it is gone, and closing the stream then fails).
        data = fp.getvalue() if isinstance(fp, io.BytesIO) else None
        reader = MemberReader(self._zip, data)
        checked = [
            name
            for name in self._members
            if (entry := entries.get(name)) is not None and entry.hash_ is not None
        ]  # not RECORD itself and its signatures

        def problem(name: str) -> WheelError | None:
            entry = entries[name]
            assert entry.hash_ is not None
            digest = hashlib.new(entry.hash_.name)
            size = 0
            try:
                for chunk in self._checked_chunks(reader, name):
                    digest.update(chunk)
                    size += len(chunk)
            except WheelError as exc:
                return exc
            except _DAMAGED as exc:
                return self._fail(
                    f"cannot read member {name!r} ({describe(exc)}): the archive is damaged; "
                    f"{_HINT}"
                )
            encoded = encode_digest(digest.digest())
            if encoded != entry.hash_.value or (entry.size is not None and size != entry.size):
                return self.mismatch(name)
            return None

        total = sum(self.info(name).file_size for name in checked)
        workers = min(_VERIFY_THREADS, cores())
        if workers < 2 or total < _PARALLEL_BYTES:
            found = {name: problem(name) for name in checked}
        else:
            order = sorted(checked, key=lambda name: self.info(name).file_size, reverse=True)
            with ThreadPoolExecutor(workers) as pool:
                found = dict(zip(order, pool.map(problem, order, chunksize=32), strict=True))
        for name in checked:
            error = found[name]
            if error is not None:
                raise error

    def _checked_chunks(self, reader: MemberReader, name: str) -> Iterator[bytes]:
        info = self.info(name)
        if info.file_size <= _WHOLE_MEMBER:
            whole = reader.read(info)
            if whole is not None:
                yield whole
                return
        stream = reader.stream(info)
        if stream is None:  # not plainly stored or deflated: zipfile reads it
            yield from self.iter_chunks(name)
            return
        while chunk := stream.read():
            yield chunk

    def mismatch(self, name: str) -> WheelError:
        return self._fail(
            f"member {name!r} does not match its RECORD hash/size: the wheel was "
            "modified or corrupted"
        )
