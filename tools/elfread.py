"""A tiny reader for the parts of 64-bit little-endian ELF shared libraries the catalog builders
need: DT_NEEDED / DT_SONAME, C strings by address, and R_*_RELATIVE relocations (pointer tables
in position-independent libraries hold their targets in the relocation addends, not in the file).

Build time only (tools/); the product never reads ELF files.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_STRSZ = 1, 5, 14, 10
_RELATIVE = {8, 1027}  # R_X86_64_RELATIVE, R_AARCH64_RELATIVE


@dataclass
class Section:
    name: str
    type: int
    addr: int
    offset: int
    size: int
    entsize: int


class Elf:
    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        self.data = data
        (_type, _machine, _version, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum,
         shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        self.segments = []  # (vaddr, offset, filesz) of PT_LOAD
        for i in range(phnum):
            p_type, _f, p_offset, p_vaddr, _pa, p_filesz, _memsz, _align = struct.unpack_from(
                "<IIQQQQQQ", data, phoff + i * phentsize)
            if p_type == 1:
                self.segments.append((p_vaddr, p_offset, p_filesz))
        raw = []
        for i in range(shnum):
            raw.append(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))
        names = raw[shstrndx][4] if shnum else 0
        self.sections = [Section(self._cstr_at(names + r[0]).decode("latin-1"), r[1], r[3], r[4], r[5], r[9])
                         for r in raw]

    def _cstr_at(self, offset: int) -> bytes:
        end = self.data.find(b"\0", offset)
        return self.data[offset:end]

    def offset_of(self, vaddr: int) -> int | None:
        for base, off, size in self.segments:
            if base <= vaddr < base + size:
                return off + vaddr - base
        return None

    def cstring(self, vaddr: int) -> bytes | None:
        off = self.offset_of(vaddr)
        return None if off is None else self._cstr_at(off)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def relative_relocs(self) -> dict[int, int]:
        """slot address -> target address, for every RELATIVE relocation (.rela.dyn)."""
        out: dict[int, int] = {}
        for s in self.sections:
            if s.type != 4:  # SHT_RELA
                continue
            for i in range(s.size // 24):
                r_offset, r_info, r_addend = struct.unpack_from("<QQq", self.data, s.offset + i * 24)
                if r_info & 0xFFFFFFFF in _RELATIVE:
                    out[r_offset] = r_addend
        return out

    def dynamic(self) -> tuple[str | None, list[str]]:
        """(DT_SONAME, [DT_NEEDED...])."""
        dyn = self.section(".dynamic")
        if dyn is None:
            return None, []
        entries = []
        strtab = None
        for i in range(dyn.size // 16):
            tag, val = struct.unpack_from("<qQ", self.data, dyn.offset + i * 16)
            if tag == 0:
                break
            if tag == _DT_STRTAB:
                strtab = val
            entries.append((tag, val))
        if strtab is None:
            return None, []
        base = self.offset_of(strtab)
        if base is None:
            dynstr = self.section(".dynstr")
            base = dynstr.offset if dynstr else None
        if base is None:
            return None, []
        soname = None
        needed = []
        for tag, val in entries:
            if tag == _DT_NEEDED:
                needed.append(self._cstr_at(base + val).decode("utf-8", "replace"))
            elif tag == _DT_SONAME:
                soname = self._cstr_at(base + val).decode("utf-8", "replace")
        return soname, needed


def needed_of_header(head: bytes) -> bool:
    """Whether a file starts like an ELF object (to skip linker scripts named lib*.so)."""
    return head[:4] == b"\x7fELF"
