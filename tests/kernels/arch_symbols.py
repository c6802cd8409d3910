#!/usr/bin/env python3
"""Each instruction set's copy of the kernels defines symbols only in its own namespace.

kernels/meson.build compiles the arch sources once per instruction set with that set's flags
(kernels/arch.h). An inline function of a shared header that one copy emits out of line would
be merged by the linker with the others' copies, and whichever it keeps would run everywhere:
an AVX-512 instruction on a CPU with only AVX2. So every symbol an arch library defines must
be in oxi::kernels::<set>:: (or be compiler bookkeeping).

usage: arch_symbols.py NM LIBRARY=SET...
"""
import re
import subprocess
import sys

# Compiler-generated, identical in every copy, no code of ours.
ALLOWED = ("DW.ref.__gxx_personality_v0",)


def qualified_name(symbol: str) -> str:
    """The entity a demangled symbol names: no return type, parameters or template arguments."""
    for prefix in ("guard variable for ", "vtable for ", "typeinfo for ", "typeinfo name for "):
        symbol = symbol.removeprefix(prefix)
    while True:
        shorter = re.sub(r"<[^<>]*>", "", symbol)
        if shorter == symbol:
            break
        symbol = shorter
    return symbol.split("(")[0].split(" ")[-1]


def main() -> int:
    nm, pairs = sys.argv[1], sys.argv[2:]
    if not pairs:
        print("usage: arch_symbols.py NM LIBRARY=SET...", file=sys.stderr)
        return 2
    bad = []
    for pair in pairs:
        lib, arch = pair.rsplit("=", 1)
        out = subprocess.run([nm, "-C", "--defined-only", lib], check=True,
                             capture_output=True, text=True).stdout
        prefix = f"oxi::kernels::{arch}::"
        seen = 0
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) != 3 or not parts[1].isupper():
                continue  # file headers, local symbols
            seen += 1
            name = parts[2]
            if name not in ALLOWED and not qualified_name(name).startswith(prefix):
                bad.append(f"{lib}: {name}")
        if seen == 0:
            bad.append(f"{lib}: no global symbols at all (wrong file?)")
        print(f"{arch}: {seen} global symbols checked")
    for b in bad:
        print("outside its instruction set's namespace:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
