"""Wheels through the unpacked cache (:mod:`wheelwise.cache.unpacked`): a wheel
archive is unpacked once into a cache entry (each member inflated, checked against
``RECORD`` and written in one pass), and every install, that one included, links
the entry's files into the environment (:class:`EntrySource`, installed by
:func:`~wheelwise.install.unpack.install_source` with a
:class:`~wheelwise.install.link.Linker`): no inflating and no hashing again.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from installer.sources import WheelContentElement, WheelSource
from installer.utils import Scheme, parse_metadata_file, parse_wheel_filename

from wheelwise.cache.unpacked import EntryFile, UnpackedWheel
from wheelwise.install.unpack import (
    Cancelled,
    Journal,
    LinkedFile,
    LinkedMember,
    VerifyingWheel,
    copy_member,
)
from wheelwise.userfiles import write_all
from wheelwise.wheels.archive import InMemoryWheel, open_zip

if TYPE_CHECKING:
    from wheelwise.fetch.verify import VerifiedWheel

__all__ = ["EntrySource", "build_entry"]

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _write_member(target: str, stream: BinaryIO, executable: bool) -> tuple[str, int, int]:
    """Write *stream* to the new file *target*; (sha256, size, mtime_ns)."""
    fd = os.open(target, _CREATE_FLAGS, 0o777 if executable else 0o666)
    try:
        sha256, size = copy_member(stream, lambda data: write_all(fd, data))
        return sha256, size, os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)


def build_entry(
    wheel: VerifiedWheel, folder: Path, journal: Journal
) -> tuple[list[EntryFile], str]:
    """Unpack *wheel* (an archive) into the new folder *folder*, every member
    checked against its ``RECORD``; what was written, and the ``.dist-info``
    folder's name. Stops (:class:`Cancelled`) once *journal* is cancelled."""
    source = wheel.source
    assert not isinstance(source, UnpackedWheel)
    archive = wheel.opened
    if archive is None or archive.fp is None:
        archive = open_zip(source if isinstance(source, InMemoryWheel) else str(source))
    files: list[EntryFile] = []
    made: set[str] = set()
    folder.mkdir()
    root = os.fspath(folder)
    with archive:
        data = source.data if isinstance(source, InMemoryWheel) else None
        members = VerifyingWheel(archive, wheel.dist_info, wheel.record, wheel.path.name, data)
        for (path, _, _), stream, executable in members.get_contents():
            if journal.is_cancelled():
                raise Cancelled
            parts = path.split("/")
            directory = root
            for part in parts[:-1]:
                directory = os.path.join(directory, part)  # noqa: PTH118
                if directory not in made:
                    os.makedirs(directory, exist_ok=True)  # noqa: PTH103
                    made.add(directory)
            target = os.path.join(directory, parts[-1])  # noqa: PTH118
            with stream:
                sha256, size, mtime_ns = _write_member(target, stream, executable)
            files.append(EntryFile(path, sha256, size, executable, mtime_ns))
    return files, wheel.dist_info


class EntrySource(WheelSource):
    """An unpacked wheel as installer's :class:`~installer.sources.WheelSource`:
    each member a :class:`LinkedMember`, except scripts, read (their ``#!python``
    line is rewritten for the target)."""

    def __init__(self, entry: UnpackedWheel) -> None:
        parsed = parse_wheel_filename(entry.filename)
        super().__init__(parsed.distribution, parsed.version)
        self.entry = entry
        self._taken: set[str] = set()

    @property
    def dist_info_dir(self) -> str:
        return self.entry.dist_info

    @property
    def dist_info_filenames(self) -> list[str]:
        prefix = self.entry.dist_info + "/"
        return [f.path[len(prefix) :] for f in self.entry.files if f.path.startswith(prefix)]

    def read_dist_info(self, filename: str) -> str:
        return self.entry.read(f"{self.entry.dist_info}/{filename}").decode("utf-8")

    def validate_record(self) -> None:
        """Checked when the entry was made (and its sizes and times when found)."""

    def take_root_files(self) -> tuple[Scheme, list[LinkedFile]]:
        """The files that go to the root scheme as they are (the wheel's folders and
        ``.dist-info``, not ``.data`` or ``RECORD``), for the destination to place all
        at once; :meth:`get_contents` leaves them out from now on. Installer gives
        each of these its root scheme and its own path, so nothing changes but
        the number of calls."""
        wheel = parse_metadata_file(self.read_dist_info("WHEEL"))
        root = Scheme("purelib" if wheel["Root-Is-Purelib"] == "true" else "platlib")
        data = self.data_dir + "/"
        record = f"{self.entry.dist_info}/RECORD"
        source = self.entry.file_path
        files = [
            LinkedFile(path, source(path), executable, sha256, size)
            for path, sha256, size, executable, _ in self.entry.files
            if not path.startswith(data)
            and path != record
            # A __pycache__ folder's files: installer warns about them, its call.
            and "/__pycache__/" not in "/" + path
        ]
        self._taken = {file.path for file in files}
        return root, files

    def get_contents(self) -> Iterator[WheelContentElement]:
        scripts = f"{self.data_dir}/scripts/"
        for item in self.entry.files:
            if item.path in self._taken:
                continue
            record = (item.path, f"sha256={item.sha256}", str(item.size))
            path = self.entry.file_path(item.path)
            stream: BinaryIO
            if item.path.startswith(scripts):
                stream = io.BytesIO(self.entry.read(item.path))
            else:
                stream = cast("BinaryIO", LinkedMember(path, item.sha256, item.size))
            yield record, stream, item.executable
