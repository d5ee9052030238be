"""The ZIP format's record layouts (APPNOTE.TXT section 4.3), declared once for every
reader and writer of wheels that works on the bytes: the quick metadata read
(``quick_read``), the member reader (``members``) and the compressed copy
(``zip_copy``). ``zipfile`` keeps its own."""

from __future__ import annotations

import struct

__all__ = [
    "CENTRAL",
    "CENTRAL_SIGNATURE",
    "END",
    "END_SIGNATURE",
    "FLAG_ENCRYPTED",
    "FLAG_UTF8_NAME",
    "LOCAL",
    "LOCAL_SIGNATURE",
    "ZIP64_END",
    "ZIP64_END_SIGNATURE",
    "ZIP64_EXTRA_ID",
    "ZIP64_LOCATOR",
    "ZIP64_LOCATOR_SIGNATURE",
    "ZIP64_MARKER",
    "ZIP64_MEMBERS_MARKER",
]

# Local file header: signature, version needed (2 bytes), flags, method, time, date,
# CRC-32, compressed and uncompressed sizes, name and extra lengths.
LOCAL = struct.Struct("<4s2B4HL2L2H")
LOCAL_SIGNATURE = b"PK\x03\x04"
# Central directory entry: signature, version made by and needed (2 bytes each),
# flags, method, time, date, CRC-32, sizes, name/extra/comment lengths, disk,
# internal attributes, external attributes, local header offset.
CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
CENTRAL_SIGNATURE = b"PK\x01\x02"
# End of central directory: signature, disk numbers, entry counts, directory size
# and offset, comment length.
END = struct.Struct("<4s4H2LH")
END_SIGNATURE = b"PK\x05\x06"
ZIP64_LOCATOR_SIGNATURE = b"PK\x06\x07"
# ZIP64 end of central directory: signature, size of the rest of the record, versions
# made by and needed, disk numbers, entry counts (this disk, all), directory size
# and offset.
ZIP64_END = struct.Struct("<4sQ2H2L4Q")
ZIP64_END_SIGNATURE = b"PK\x06\x06"
# ZIP64 locator: signature, disk of the ZIP64 end record, its offset, disk count.
ZIP64_LOCATOR = struct.Struct("<4sLQL")
# The extra field that holds a member's sizes and offset past the 32-bit fields.
ZIP64_EXTRA_ID = 0x0001
# A 32-bit size or offset (16-bit count) with this value is in the ZIP64 records.
ZIP64_MARKER = 0xFFFFFFFF
ZIP64_MEMBERS_MARKER = 0xFFFF
# General purpose flag bits.
FLAG_ENCRYPTED = 0x1
FLAG_UTF8_NAME = 0x800
