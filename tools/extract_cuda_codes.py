#!/usr/bin/env python3
"""Build sglang_doctor/data/cuda-codes.json: CUDA runtime, driver and NCCL result codes.

All read from NVIDIA's wheels on PyPI (nothing is typed by hand except the class map):

* ``cudaError_t`` -- names, numbers and doc comments from ``include/driver_types.h``; the
  message ``cudaGetErrorString`` returns (what ``CUDA error: ...`` prints) from the table in
  ``lib/libcudart.so.*`` (rows of {code, name pointer, message pointer}; the pointers are
  RELATIVE relocations, resolved with tools/elfread.py);
* ``CUresult`` -- names, numbers and doc comments from ``include/cuda.h``. Its messages
  (``cuGetErrorString``) live in the driver (libcuda), which no wheel ships: an entry borrows
  the runtime's message of the cudaError with the same number (the runtime numbers its errors
  like the driver: 2 out of memory, 209 no kernel image, 716 misaligned address, ...), marked
  ``message_from: "cudart"`` with that error's name;
* ``ncclResult_t`` -- from ``include/nccl.h``; the messages ``ncclGetErrorString`` returns are the
  run of strings in ``lib/libnccl.so.2`` that starts with "no error", one per code, in the
  order of the enum (the function is a switch over it) and closed by its default case.

Both CUDA 12 (``nvidia-cuda-runtime-cu12``) and CUDA 13 (``nvidia-cuda-runtime``) runtime wheels
are read; a code that exists in only one of them says so (``cuda: "12"`` / ``"13"``).

The fix class of each code comes from the hand-written ``sglang_doctor/data/cuda-classes.yaml``
(by error class, small; see that file), embedded here so the reader needs no YAML parser.

Usage::

    python tools/extract_cuda_codes.py
    python tools/extract_cuda_codes.py --classes-only     # re-embed the class map, no wheels
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
import zipfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import elfread  # noqa: E402
import wheelcache  # noqa: E402

REPO = wheelcache.REPO
DEFAULT_OUT = REPO / "sglang_doctor" / "data" / "cuda-codes.json"
CLASSES = REPO / "sglang_doctor" / "data" / "cuda-classes.yaml"
FORMAT_VERSION = 1
CUDA_WHEELS = [("nvidia-cuda-runtime-cu12", "12.9.79", "12"), ("nvidia-cuda-runtime", "13.5.37", "13")]
NCCL_WHEEL = ("nvidia-nccl-cu12", "2.32.3")

_ENUM_ITEM = re.compile(r"(?:/\*\*(?P<doc>(?:(?!\*/).)*?)\*/\s*)?(?P<name>\w+)\s*=\s*(?P<value>-?(?:0x[0-9a-fA-F]+|\d+))",
                        re.S)


def enum_body(header: str, opener: str) -> str:
    """The text between the braces of the enum that ``opener`` (a regex) introduces."""
    m = re.search(opener + r"\s*\{", header)
    if not m:
        raise SystemExit(f"enum {opener!r} not found")
    end = header.index("}", m.end())
    return header[m.end():end]


def clean_doc(doc: str | None) -> tuple[str, bool]:
    """(first sentence, deprecated) of a Doxygen comment."""
    if not doc:
        return "", False
    lines = [re.sub(r"^\s*\*\s?", "", ln) for ln in doc.strip().splitlines()]
    text = " ".join(ln.strip() for ln in lines if ln.strip())
    deprecated = "\\deprecated" in text
    text = re.sub(r"\\deprecated\s*", "", text)
    text = re.sub(r"::(\w)", r"\1", text).replace("\\p ", "").replace("\\e ", "")
    m = re.search(r"(.+?[.!])(?:\s+[A-Z(]|$)", text)
    return (m.group(1) if m else text).strip(), deprecated


def parse_enum(body: str) -> list[tuple[str, int, str, bool]]:
    out = []
    for m in _ENUM_ITEM.finditer(body):
        doc, deprecated = clean_doc(m.group("doc"))
        out.append((m.group("name"), int(m.group("value"), 0), doc, deprecated))
    return out


def cudart_messages(lib: bytes) -> dict[int, tuple[str, str]]:
    """code -> (name, message) from libcudart's error table."""
    elf = elfread.Elf(lib)
    relocs = elfread.Elf.relative_relocs(elf)
    out: dict[int, tuple[str, str]] = {}
    for slot, target in relocs.items():
        name = elf.cstring(target)
        if not name or not re.fullmatch(rb"cuda(?:Success|Error\w+)", name):
            continue
        msg_target = relocs.get(slot + 8)
        code_off = elf.offset_of(slot - 8)
        if msg_target is None or code_off is None:
            continue
        msg = elf.cstring(msg_target)
        code = struct.unpack_from("<q", lib, code_off)[0]
        if msg is None or not 0 <= code < 100000:
            continue
        out.setdefault(code, (name.decode(), msg.decode("utf-8", "replace")))
    return out


def nccl_messages(lib: bytes, count: int) -> list[str]:
    start = lib.find(b"\0no error\0")
    if start < 0:
        raise SystemExit("libnccl: 'no error' not found")
    strings = lib[start + 1:start + 4096].split(b"\0")
    msgs = [s.decode("latin-1") for s in strings if s][:count + 1]  # (alignment pads some with NULs)
    if not msgs[-1].startswith("unknown"):  # the switch's default closes the run
        raise SystemExit(f"libnccl: unexpected message run {msgs}")
    return msgs[:count]


def read_cuda(wheel: Path) -> tuple[list, list, dict[int, tuple[str, str]]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        drv = next(n for n in names if n.endswith("include/driver_types.h"))
        cuh = next(n for n in names if n.endswith("include/cuda.h"))
        lib = next(n for n in names if re.search(r"lib/libcudart\.so\.\d+$", n))
        rt = parse_enum(enum_body(zf.read(drv).decode("utf-8", "replace"), r"enum\s+__device_builtin__\s+cudaError\b"))
        dr = parse_enum(enum_body(zf.read(cuh).decode("utf-8", "replace"), r"typedef\s+enum\s+cudaError_enum\b"))
        return rt, dr, cudart_messages(zf.read(lib))


def build() -> dict:
    entries: dict[tuple[str, str], dict] = {}
    wheels = []
    for dist, version, major in CUDA_WHEELS:
        wheel = wheelcache.fetch(dist, version)
        wheels.append(wheel)
        rt, dr, msgs = read_cuda(wheel)
        runtime_by_code = {}
        for name, code, doc, dep in rt:
            msg = msgs.get(code)
            if msg and msg[0] != name:
                msg = None  # the table disagrees with the header: leave the message out
            e = entries.setdefault(("cudaError_t", name), {
                "package": "cuda", "enum": "cudaError_t", "name": name, "code": code, "doc": doc,
                "message": msg[1] if msg else None, "cuda": []})
            e["cuda"].append(major)
            if dep:
                e["deprecated"] = True
            runtime_by_code[code] = (name, e["message"])
        for name, code, doc, dep in dr:
            same = runtime_by_code.get(code)
            borrowed = bool(same and same[1])
            e = entries.setdefault(("CUresult", name), {
                "package": "cuda", "enum": "CUresult", "name": name, "code": code, "doc": doc,
                "message": same[1] if borrowed else None, "cuda": []})
            if borrowed and e.get("message"):
                e["message_from"] = "cudart"
                e["runtime_name"] = same[0]
            e["cuda"].append(major)
            if dep:
                e["deprecated"] = True
    nccl_wheel = wheelcache.fetch(*NCCL_WHEEL)
    wheels.append(nccl_wheel)
    with zipfile.ZipFile(nccl_wheel) as zf:
        names = zf.namelist()
        header = zf.read(next(n for n in names if n.endswith("include/nccl.h"))).decode()
        lib = zf.read(next(n for n in names if re.search(r"lib/libnccl\.so\.\d+$", n)))
    m = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*ncclResult_t\s*;", header)
    if not m:
        raise SystemExit("nccl.h: ncclResult_t not found")
    codes = [(n, v) for n, v, _d, _dep in parse_enum(m.group(1)) if n != "ncclNumResults"]
    msgs = nccl_messages(lib, len(codes))
    for (name, code), msg in zip(codes, msgs):
        entries[("ncclResult_t", name)] = {"package": "nccl", "enum": "ncclResult_t", "name": name, "code": code,
                                          "doc": "", "message": msg}
    rows = []
    for e in entries.values():
        if "cuda" in e:
            e["cuda"] = "12,13" if e["cuda"] == ["12", "13"] else ",".join(e["cuda"])
        rows.append(e)
    order = {"cudaError_t": 0, "CUresult": 1, "ncclResult_t": 2}
    rows.sort(key=lambda e: (order[e["enum"]], e["code"], e["name"]))
    return {
        "format": FORMAT_VERSION,
        "generator": "tools/extract_cuda_codes.py",
        "source": "NVIDIA wheels from PyPI: driver_types.h, cuda.h, libcudart's error table, nccl.h, libnccl's "
                  "ncclGetErrorString strings",
        "wheels": wheelcache.provenance(wheels),
        "counts": {k: sum(1 for e in rows if e["enum"] == k) for k in order},
        "entries": rows,
    }


def embed_classes(data: dict, classes_path: Path = CLASSES) -> dict:
    """Add the curated class map (checked against the extracted names)."""
    spec = yaml.safe_load(classes_path.read_text())
    known = {e["name"] for e in data["entries"]}
    by_name: dict[str, str] = {}
    for cls, body in spec["classes"].items():
        for name in body["names"]:
            if name not in known:
                raise SystemExit(f"cuda-classes.yaml: {cls}: {name} is not in the extracted codes")
            if name in by_name:
                raise SystemExit(f"cuda-classes.yaml: {name} is in {by_name[name]} and {cls}")
            by_name[name] = cls
    for e in data["entries"]:
        e.pop("class", None)
        if e["name"] in by_name:
            e["class"] = by_name[e["name"]]
    data["classes"] = {cls: {k: v for k, v in body.items() if k != "names"} for cls, body in spec["classes"].items()}
    data["classes_source"] = "sglang_doctor/data/cuda-classes.yaml (hand-written)"
    return data


def write(data: dict, out: Path) -> None:
    """One entry per line: small diffs when a wheel changes."""
    head = {k: v for k, v in data.items() if k != "entries"}
    lines = [json.dumps(e, ensure_ascii=False) for e in data["entries"]]
    body = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    out.write_text(body + ',\n "entries": [\n' + ",\n".join(lines) + "\n ]\n}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--classes-only", action="store_true", help="re-embed cuda-classes.yaml into --out")
    args = ap.parse_args(argv)
    data = json.loads(args.out.read_text()) if args.classes_only else build()
    write(embed_classes(data), args.out)
    print(f"{data['counts']} -> {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
