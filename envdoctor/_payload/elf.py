"""ELF and CUDA fat binaries read by hand (no ldd, no cuobjdump): DT_NEEDED, SONAME, RPATH, the section table, the
dynamic symbols an object needs or defines, and the GPU architectures compiled into a .nv_fatbin section."""

import struct
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .common import _exc_text

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
MAX_SECTIONS = 65536


class ElfLayout(NamedTuple):
    """Where the ELF header keeps what we read, per class (gABI "ELF Header": the fields after e_ident)."""

    header: int  # bytes of the header after e_ident
    offsets_fmt: str  # e_phoff, e_shoff
    offsets: Tuple[int, int]  # their slice of the header
    tables: Tuple[int, int]  # e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx (five halfwords)
    phdr: str  # one program header
    dyn: str  # one dynamic entry (d_tag, d_val)
    shdr: str  # one section header


ELF64 = ElfLayout(48, "QQ", (16, 32), (38, 48), "IIQQQQQQ", "qQ", "IIQQQQIIQQ")
ELF32 = ElfLayout(36, "II", (12, 20), (26, 36), "IIIIIIII", "iI", "IIIIIIIIII")


def elf_read(path: str, sections: bool = False) -> Optional[Dict[str, Any]]:
    """The dynamic section of an ELF shared object (needed, soname, rpath, runpath) and, with
    ``sections``, its section table ({name: (file offset, size)}); None when it is not a readable ELF file.

    Reads only the headers, the dynamic section and the string tables (libtorch_cuda.so is 500 MB+).
    Reference: System V gABI, "ELF Header", "Sections" and "Dynamic Section"; the layout readelf -d / -S prints.
    """
    try:
        with open(path, "rb") as f:
            ident = f.read(16)
            if len(ident) < 16 or ident[:4] != b"\x7fELF":
                return None
            is64 = ident[4] == 2
            end = "<" if ident[5] == 1 else ">"
            lay = ELF64 if is64 else ELF32
            hdr = f.read(lay.header)
            if len(hdr) < lay.header:
                return None
            phoff, shoff = struct.unpack(end + lay.offsets_fmt, hdr[lay.offsets[0]:lay.offsets[1]])
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack(end + "HHHHH",
                                                                         hdr[lay.tables[0]:lay.tables[1]])
            ph_fmt, dyn_fmt, sh_fmt = end + lay.phdr, end + lay.dyn, end + lay.shdr
            if phnum == 0 or phnum > 4096 or phentsize < struct.calcsize(ph_fmt):
                return None
            out: Dict[str, Any] = {"needed": [], "soname": None, "rpath": None, "runpath": None}
            loads = []  # (vaddr, offset, filesz)
            dynamic = None  # (offset, size)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                raw = table[i * phentsize: i * phentsize + struct.calcsize(ph_fmt)]
                if len(raw) < struct.calcsize(ph_fmt):
                    break
                fields = struct.unpack(ph_fmt, raw)
                if is64:
                    p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
                else:
                    p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
                if p_type == PT_LOAD:
                    loads.append((p_vaddr, p_offset, p_filesz))
                elif p_type == PT_DYNAMIC:
                    dynamic = (p_offset, p_filesz)
            if sections:
                out["sections"] = _elf_sections(f, shoff, shentsize, shnum, shstrndx, sh_fmt, is64)
            if dynamic is None:
                return out
            f.seek(dynamic[0])
            dyn = f.read(min(dynamic[1], 1 << 20))
            size = struct.calcsize(dyn_fmt)
            refs: List[Tuple[int, int]] = []  # (tag, string offset)
            strtab = strsz = None
            for i in range(0, len(dyn) - size + 1, size):
                tag, val = struct.unpack(dyn_fmt, dyn[i: i + size])
                if tag == DT_NULL:
                    break
                if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                    refs.append((tag, val))
                elif tag == DT_STRTAB:
                    strtab = val
                elif tag == DT_STRSZ:
                    strsz = val
            if strtab is None:
                return out if not refs else None
            # DT_STRTAB is a virtual address: map it to a file offset through the PT_LOAD segments
            str_off = None
            for vaddr, offset, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    str_off = offset + (strtab - vaddr)
                    break
            if str_off is None:
                str_off = strtab  # unrelocated objects: the address is the offset
            f.seek(str_off)
            strings = f.read(min(strsz or (1 << 20), 16 << 20))
            for tag, off in refs:
                stop = strings.find(b"\0", off)
                if off >= len(strings) or stop < 0:
                    continue
                text = strings[off:stop].decode("utf-8", "replace")
                if tag == DT_NEEDED:
                    out["needed"].append(text)
                else:
                    out[{DT_SONAME: "soname", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}[tag]] = text
            return out
    except (OSError, struct.error, ValueError, OverflowError):
        return None


def _elf_sections(f: Any, shoff: int, shentsize: int, shnum: int, shstrndx: int, sh_fmt: str,
                  is64: bool) -> Dict[str, Tuple[int, int]]:
    """{section name: (file offset, size)} from the section header table (empty when there is none)."""
    need = struct.calcsize(sh_fmt)
    if not shoff or shnum == 0 or shnum > MAX_SECTIONS or shentsize < need or shstrndx >= shnum:
        return {}
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    heads = []
    for i in range(shnum):
        raw = table[i * shentsize: i * shentsize + need]
        if len(raw) < need:
            break
        fields = struct.unpack(sh_fmt, raw)
        # (name offset, type, flags, addr, offset, size, ...): the same order in both classes
        heads.append((fields[0], fields[1], fields[4], fields[5]))
    if shstrndx >= len(heads):
        return {}
    _n, _t, str_off, str_size = heads[shstrndx]
    f.seek(str_off)
    names = f.read(min(str_size, 1 << 20))
    out = {}  # type: Dict[str, Tuple[int, int]]
    for name_off, sh_type, offset, size in heads:
        stop = names.find(b"\0", name_off)
        if name_off >= len(names) or stop < 0:
            continue
        name = names[name_off:stop].decode("utf-8", "replace")
        if name and sh_type != 8:  # SHT_NOBITS (.bss) occupies no file bytes
            out.setdefault(name, (offset, size))
    return out


def elf_needed(path: str) -> Optional[List[str]]:
    """The DT_NEEDED entries of an ELF shared object, or None when it is not a readable ELF file."""
    info = elf_read(path)
    return None if info is None else list(info["needed"])


FATBIN_MAGIC = 0xBA55ED50  # the "fatBinaryHeader" magic nvcc writes into .nv_fatbin
FATBIN_KIND_PTX, FATBIN_KIND_CUBIN = 1, 2
MAX_FATBIN_ENTRIES = 200000


def fatbin_archs(path: str, offset: int, size: int) -> Dict[str, Any]:
    """The GPU architectures compiled into a .nv_fatbin section, walking entry headers only.

    The section is a run of fat binaries (one per compiled .cu file, 8-byte aligned), each a 16-byte
    header (magic u32, version u16, header size u16, payload size u64) followed by entries whose
    headers start with kind u16 (1 PTX, 2 cubin), u16, header size u32, payload size u64, and hold
    the SM version as u32 at byte 28. This layout is not documented by NVIDIA: it is what cuobjdump
    lists and what open readers (e.g. n-eiling/cuda-fatbin-decompression) parse; it was checked here
    against torch.cuda.get_arch_list() of torch 2.14.1+cu130. Payloads (possibly compressed) are skipped,
    so a 300 MB section costs a few thousand small reads.

    Returns {"sass": {sm: number of fat binaries holding it}, "ptx": {...}, "fatbins": N} or "error".
    """
    sass: Dict[int, int] = {}
    ptx: Dict[int, int] = {}
    fatbins = entries = 0
    stop = offset + size
    try:
        with open(path, "rb") as f:
            pos = offset
            while pos + 16 <= stop:
                f.seek(pos)
                head = f.read(16)
                if len(head) < 16:
                    break
                magic, _ver, hsize, fsize = struct.unpack("<IHHQ", head)
                if magic != FATBIN_MAGIC:
                    # padding between fat binaries: find the next header in the next 64 KiB
                    f.seek(pos)
                    window = f.read(min(65536, stop - pos))
                    found = window.find(struct.pack("<I", FATBIN_MAGIC), 1)
                    if found < 0:
                        break
                    pos += found
                    continue
                fatbins += 1
                here_sass, here_ptx = set(), set()
                entry, fend = pos + hsize, min(pos + hsize + fsize, stop)
                while entry + 32 <= fend and entries < MAX_FATBIN_ENTRIES:
                    f.seek(entry)
                    eh = f.read(32)
                    if len(eh) < 32:
                        break
                    kind, _u, ehsize, esize = struct.unpack("<HHIQ", eh[:16])
                    arch = struct.unpack("<I", eh[28:32])[0]
                    entries += 1
                    if kind == FATBIN_KIND_CUBIN:
                        here_sass.add(arch)
                    elif kind == FATBIN_KIND_PTX:
                        here_ptx.add(arch)
                    if ehsize == 0:
                        break
                    entry += ehsize + esize
                for a in here_sass:
                    sass[a] = sass.get(a, 0) + 1
                for a in here_ptx:
                    ptx[a] = ptx.get(a, 0) + 1
                pos = pos + hsize + fsize if fsize else pos + 16
    except (OSError, struct.error, ValueError, OverflowError) as e:
        return {"error": f"reading {path}: {_exc_text(e)}"}
    return {"sass": sass, "ptx": ptx, "fatbins": fatbins, "entries": entries}


def arch_list_from_fatbin(scan: Dict[str, Any]) -> Tuple[Optional[List[str]], List[str]]:
    """(the build's arch list, architectures only some kernels carry) from a fatbin_archs() result.

    torch's arch list (TORCH_CUDA_ARCH_LIST) is compiled into every .cu file, so it is what at least
    half of the fat binaries carry; a few kernels add their own (sm_89, sm_103 ...), listed apart.
    """
    n = scan.get("fatbins") or 0
    if not n:
        return None, []
    main: List[Tuple[int, str]] = []
    partial: List[Tuple[int, str]] = []
    for table, prefix in ((scan.get("sass") or {}, "sm_"), (scan.get("ptx") or {}, "compute_")):
        for arch, count in table.items():
            name = f"{prefix}{arch}"
            (main if count * 2 >= n else partial).append((arch, name))
    # sm_ entries before compute_ entries of the same arch, as torch orders them
    return [name for _a, name in sorted(main, key=lambda x: (x[0], x[1].startswith("compute")))], \
        [name for _a, name in sorted(partial)]


SHN_UNDEF = 0
STB_GLOBAL, STB_WEAK = 1, 2
MAX_SYMBOL_BYTES = 256 << 20  # libtorch_cpu.so's .dynstr is tens of MB; nothing real is near this


def _dynsym(path: str) -> Optional[Tuple[bytes, List[Tuple[int, int, int]]]]:
    """(the .dynstr bytes, (name offset, binding, section index) per .dynsym entry) of an ELF file; None when it is
    not a readable ELF file or has no dynamic symbol table. Reference: System V gABI, "Symbol Table" (Elf32_Sym:
    name, value, size, info, other, shndx; Elf64_Sym: name, info, other, shndx, value, size)."""
    info = elf_read(path, sections=True)
    if info is None:
        return None
    sections = info.get("sections") or {}
    sym, strs = sections.get(".dynsym"), sections.get(".dynstr")
    if sym is None or strs is None or sym[1] > MAX_SYMBOL_BYTES or strs[1] > MAX_SYMBOL_BYTES:
        return None
    try:
        with open(path, "rb") as f:
            ident = f.read(16)
            is64, end = ident[4] == 2, "<" if ident[5] == 1 else ">"
            f.seek(strs[0])
            strings = f.read(strs[1])
            f.seek(sym[0])
            table = f.read(sym[1])
    except OSError:
        return None
    fmt = end + ("IBBHQQ" if is64 else "IIIBBH")
    size = struct.calcsize(fmt)
    table = table[: len(table) - len(table) % size]
    entries = []
    for fields in struct.iter_unpack(fmt, table):
        if is64:
            name, st_info, _other, shndx = fields[:4]
        else:
            name, st_info, shndx = fields[0], fields[3], fields[5]
        entries.append((name, st_info >> 4, shndx))
    return strings, entries


def _name_at(strings: bytes, off: int) -> Optional[bytes]:
    stop = strings.find(b"\0", off)
    return strings[off:stop] if 0 < off < len(strings) and stop > off else None


def elf_undefined_symbols(path: str, pattern: Any) -> Optional[List[str]]:
    """The undefined (global, not weak) dynamic symbols of an ELF file whose names match ``pattern`` (a bytes regex), sorted; None
    when the file has no readable dynamic symbol table."""
    got = _dynsym(path)
    if got is None:
        return None
    strings, entries = got
    out = set()
    for off, bind, shndx in entries:
        if shndx != SHN_UNDEF or bind != STB_GLOBAL:  # a weak undefined symbol may stay unresolved (it reads 0)
            continue
        name = _name_at(strings, off)
        if name is not None and pattern.match(name):
            out.add(name.decode("ascii", "replace"))
    return sorted(out)


def elf_defined_symbols(path: str, pattern: Any) -> Optional[List[str]]:
    """The global or weak dynamic symbols an ELF file defines (what the loader resolves another object's undefined
    symbol to) whose names match ``pattern``; None when the file has no readable dynamic symbol table.
    libtorch_cpu.so defines some hundred thousand: one pass over its table, each name read where it starts."""
    got = _dynsym(path)
    if got is None:
        return None
    strings, entries = got
    out = []
    for off, bind, shndx in entries:
        if shndx == SHN_UNDEF or bind not in (STB_GLOBAL, STB_WEAK):
            continue
        name = _name_at(strings, off)
        if name is not None and pattern.match(name):
            out.append(name.decode("ascii", "replace"))
    return out
