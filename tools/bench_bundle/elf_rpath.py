"""Point a 64-bit little-endian ELF file's library search path (DT_RPATH or DT_RUNPATH)
somewhere else, in place.

The overlay links its nodes with an absolute DT_RPATH into the build tree (the wheels'
library folders, see .ros/<flavour>/env.sh). DT_RPATH is searched before LD_LIBRARY_PATH, so on
the machine that made a bundle its nodes would load the build tree's libraries instead
of the bundle's. The bundle rewrites those paths to `$ORIGIN`-relative ones. The new
path is written over the old string in the dynamic string table, so it must not be
longer; the rest of the old string is zeroed. No section moves and nothing else
changes, which is all a bundle needs and why no patchelf is required.
"""

from __future__ import annotations

import struct
from pathlib import Path

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 5, 15, 29


class NotElf64(Exception):
    """The file is not a 64-bit little-endian ELF file."""


def _segments(data: bytes) -> list[tuple[int, int, int, int]]:
    """(type, offset, vaddr, filesz) of every program header."""
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        raise NotElf64()
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    segments = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            '<IIQQQQ', data, phoff + i * phentsize)
        segments.append((p_type, p_offset, p_vaddr, p_filesz))
    return segments


def _file_offset(segments, vaddr: int) -> int:
    for p_type, offset, start, size in segments:
        if p_type == PT_LOAD and start <= vaddr < start + size:
            return vaddr - start + offset
    raise ValueError(f'address {vaddr:#x} is in no loaded segment')


def _search_path_entries(data: bytes):
    """(tag, file offset of the string, the string) for DT_RPATH and DT_RUNPATH."""
    segments = _segments(data)
    dynamic = next((s for s in segments if s[0] == PT_DYNAMIC), None)
    if dynamic is None:
        return []
    entries, strtab = [], None
    offset = dynamic[1]
    while offset + 16 <= dynamic[1] + dynamic[3]:
        tag, value = struct.unpack_from('<qQ', data, offset)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag in (DT_RPATH, DT_RUNPATH):
            entries.append((tag, value))
        offset += 16
    if strtab is None:
        return []
    base = _file_offset(segments, strtab)
    found = []
    for tag, index in entries:
        start = base + index
        end = data.index(b'\0', start)
        found.append((tag, start, data[start:end].decode()))
    return found


def search_path(path: Path) -> str | None:
    """The file's DT_RPATH or DT_RUNPATH, or None."""
    entries = _search_path_entries(path.read_bytes())
    return entries[0][2] if entries else None


def replace_search_path(path: Path, new: str) -> bool:
    """Write `new` over the file's DT_RPATH/DT_RUNPATH; False if it has none, or if
    `new` is longer than the old one (then nothing changes)."""
    data = bytearray(path.read_bytes())
    entries = _search_path_entries(bytes(data))
    encoded = new.encode()
    if not entries or any(len(encoded) > len(old.encode()) for _, _, old in entries):
        return False
    for _, start, old in entries:
        length = len(old.encode())
        data[start:start + length] = encoded + b'\0' * (length - len(encoded))
    path.write_bytes(bytes(data))
    return True
