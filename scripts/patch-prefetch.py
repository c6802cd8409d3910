#!/usr/bin/env python3
"""Rewrites the software prefetches of chosen functions in a built binary, for A/B benchmarks
in which no instruction moves.

Decode speed on the development VM depends on where the kernels' code lands (docs/benchmarks.md,
thirty-second to thirty-fourth sessions), so comparing two builds of different source compares
two code layouts as well. A prefetch instruction (0F 18 /r) can be given another hint (the ModRM
reg field) or turned into a NOP of the same length (0F 1F /0, same ModRM and displacement)
without moving any byte, so the copy differs from the original only in what those prefetches do.

  scripts/patch-prefetch.py IN OUT SYMBOL [SYMBOL...] --from nta --to nop|t0|t1|t2|nta

SYMBOL: a substring of the demangled name (`nm -C`) of every function to patch, e.g.
'avx512::Q4KR8Tile::matvec('. Prints how many instructions it changed in which functions.
Needs binutils (nm, objdump, readelf).
"""
import argparse
import os
import re
import subprocess
import sys

HINTS = {"nta": 0, "t0": 1, "t1": 2, "t2": 3}
MNEMONIC = {0: "prefetchnta", 1: "prefetcht0", 2: "prefetcht1", 3: "prefetcht2"}


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def functions(binary, wanted):
    """(address, size, name) of the defined functions whose demangled name contains a SYMBOL."""
    found = []
    for line in run("nm", "-S", "-C", binary).splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2].lower() in ("t", "w") and any(w in parts[3] for w in wanted):
            found.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return found


def file_offset(segments, address):
    for vaddr, offset, size in segments:
        if vaddr <= address < vaddr + size:
            return address - vaddr + offset
    raise SystemExit(f"address {address:#x} is in no loaded segment")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("symbols", nargs="+")
    p.add_argument("--from", dest="source", choices=HINTS, default="nta")
    p.add_argument("--to", dest="target", choices=[*HINTS, "nop"], required=True)
    a = p.parse_args()

    segments = []
    for line in run("readelf", "-lW", a.input).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segments.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))
    data = bytearray(open(a.input, "rb").read())
    source = HINTS[a.source]
    targets = functions(a.input, a.symbols)
    if not targets:
        raise SystemExit(f"{a.input}: no function matches {a.symbols}")
    insn = re.compile(r"\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)")
    for address, size, name in targets:
        changed = 0
        listing = run("objdump", "-d", f"--start-address={address}",
                      f"--stop-address={address + size}", a.input)
        for line in listing.splitlines():
            m = insn.match(line)
            if not m or m.group(3) != MNEMONIC[source]:
                continue
            code = m.group(2).split()
            i = code.index("0f")  # after any prefixes
            if code[i + 1] != "18":
                raise SystemExit(f"unexpected encoding at {m.group(1)}: {' '.join(code)}")
            opcode = file_offset(segments, int(m.group(1), 16)) + i + 1
            if a.target == "nop":
                data[opcode] = 0x1F
                data[opcode + 1] &= ~0x38
            else:
                data[opcode + 1] = (data[opcode + 1] & ~0x38) | HINTS[a.target] << 3
            changed += 1
        print(f"{changed:4d} x {MNEMONIC[source]} -> {a.target}: {name[:120]}")
    with open(a.output, "wb") as out:
        out.write(data)
    os.chmod(a.output, 0o755)


if __name__ == "__main__":
    sys.exit(main())
