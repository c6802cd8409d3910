#!/usr/bin/env python3
"""Generates lib/tokenizer/unicode_tables.h from Python's unicodedata.

The tokenizers need, per code point: the general category (for the \\p{L}, \\p{N}, \\p{P}...
classes of the pre-tokenizer patterns and for BERT's punctuation / control / accent rules),
the canonical decomposition (NFD, for BERT's accent stripping), the compatibility decomposition
(NFKD, for tokenizer.json's NFKC normalizer), the canonical combining class and the primary
composites (NFC and NFKC, for tokenizer.json's normalizers) and the lowercase
mapping. The chat templates' Python string methods (lib/chat/python_str.cpp) also need the upper-
and titlecase mappings and Python's casing properties (str.title(), islower(), isupper() and
lower()'s final sigma) and its digit, numeric and space classes.
Everything is stored as compact sorted tables that unicode.cpp binary-searches.

usage: python3 scripts/gen_unicode_tables.py [OUTPUT]   (default: lib/tokenizer/unicode_tables.h)
"""
import os
import sys
import unicodedata

CATEGORIES = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd",
              "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf",
              "Cs", "Co"]
MAX_CP = 0x110000
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3  # decomposed algorithmically in unicode.cpp


def wrap(items, indent="    ", width=100):
    lines, line = [], indent
    for item in items:
        piece = item + ","
        if len(line) + len(piece) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += piece + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def category_runs():
    runs, previous = [], None
    for cp in range(MAX_CP):
        cat = CATEGORIES.index(unicodedata.category(chr(cp)))
        if cat != previous:
            runs.append((cp, cat))
            previous = cat
    return runs


def mappings(transform):
    """(cp, offset, length) rows plus the flat code point data they index."""
    rows, data = [], []
    for cp in range(MAX_CP):
        if 0xD800 <= cp <= 0xDFFF or HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        mapped = transform(chr(cp))
        if mapped == chr(cp):
            continue
        rows.append((cp, len(data), len(mapped)))
        data.extend(ord(c) for c in mapped)
    return rows, data


def title_differences():
    """(cp, offset, length) rows for the code points whose titlecase mapping (str.title() of the
    character alone) is not their uppercase mapping; the others title as they upper."""
    rows, data = [], []
    for cp in range(MAX_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if c.title() != c.upper():
            rows.append((cp, len(data), len(c.title())))
            data.extend(ord(x) for x in c.title())
    return rows, data


def str_property_runs():
    """Runs of what Python's str methods see of a code point, as bits: 1 cased (str.title()
    lowercases the letter after it), 2 lowercase (islower), 4 uppercase (isupper), 8 titlecase
    (istitle and not isupper), 16 case-ignorable (lower() looks past it for a final sigma),
    32 isdigit, 64 isnumeric, 128 isspace."""
    runs, previous = [], None
    for cp in range(MAX_CP):
        flags = 0
        if not 0xD800 <= cp <= 0xDFFF:
            c = chr(cp)
            cased = (c + "a").title().endswith("a")
            # A final sigma after c: skipped over when c is case-ignorable, so what stands
            # before c decides (a cased "A": final form; a space: not).
            ignorable = (("A" + c + "\u03a3").lower().endswith("\u03c2") if not cased else
                         (" " + c + "\u03a3").lower().endswith("\u03c3"))
            flags = (int(cased) | int(c.islower()) << 1 | int(c.isupper()) << 2 |
                     int(c.istitle() and not c.isupper()) << 3 | int(ignorable) << 4 |
                     int(c.isdigit()) << 5 | int(c.isnumeric()) << 6 | int(c.isspace()) << 7)
        if flags != previous:
            runs.append((cp, flags))
            previous = flags
    return runs


def combining_class_runs():
    runs, previous = [], None
    for cp in range(MAX_CP):
        ccc = unicodedata.combining(chr(cp))
        if ccc != previous:
            runs.append((cp, ccc))
            previous = ccc
    return runs


def compositions():
    """(first, second, composite), sorted: the canonical pairs NFC composes (primary composites:
    two-code-point canonical decompositions that NFC gives back; exclusions and non-starter
    decompositions fail that check). Hangul is composed algorithmically."""
    rows = []
    for cp in range(MAX_CP):
        if 0xD800 <= cp <= 0xDFFF or HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            rows.append((parts[0], parts[1], cp))
    return sorted(rows)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        root, "lib", "tokenizer", "unicode_tables.h")
    runs = category_runs()
    nfd_rows, nfd_data = mappings(lambda s: unicodedata.normalize("NFD", s))
    nfkd_rows, nfkd_data = mappings(lambda s: unicodedata.normalize("NFKD", s))
    lower_rows, lower_data = mappings(lambda s: s.lower())
    upper_rows, upper_data = mappings(lambda s: s.upper())
    title_rows, title_data = title_differences()
    str_props = str_property_runs()
    ccc_runs = combining_class_runs()
    pairs = compositions()

    out = []
    out.append("// Generated by scripts/gen_unicode_tables.py from Python's unicodedata\n"
               f"// (Unicode {unicodedata.unidata_version}). Do not edit.")
    out.append("#pragma once\n\n#include <cstdint>\n\nnamespace oxi::tokenizer::unicode_tables {\n")
    out.append("inline constexpr const char* kUnicodeVersion = "
               f"\"{unicodedata.unidata_version}\";\n")
    out.append("// General categories, in the order of oxi::tokenizer::Category.")
    out.append("// Runs of equal category: a run starts at `first` and lasts until the next run.")
    out.append("struct CategoryRun {\n  uint32_t first;\n  uint8_t category;\n};")
    out.append(f"inline constexpr CategoryRun kCategoryRuns[{len(runs)}] = {{")
    out.append(wrap([f"{{0x{cp:X}, {cat}}}" for cp, cat in runs]))
    out.append("};\n")
    out.append("// A code point's mapping: `length` code points at `offset` of the data array.")
    out.append("struct Mapping {\n  uint32_t code_point;\n  uint32_t offset;\n"
               "  uint32_t length;\n};")
    for name, rows, data, what in (
            ("Nfd", nfd_rows, nfd_data, "Full canonical decompositions (NFD), Hangul excluded."),
            ("Nfkd", nfkd_rows, nfkd_data,
             "Full compatibility decompositions (NFKD), Hangul excluded."),
            ("Lowercase", lower_rows, lower_data, "Full lowercase mappings (str.lower)."),
            ("Uppercase", upper_rows, upper_data, "Full uppercase mappings (str.upper)."),
            ("Titlecase", title_rows, title_data,
             "Full titlecase mappings where they differ from the uppercase ones.")):
        out.append(f"// {what}")
        out.append(f"inline constexpr Mapping k{name}Mappings[{len(rows)}] = {{")
        out.append(wrap([f"{{0x{cp:X}, {off}, {n}}}" for cp, off, n in rows]))
        out.append("};")
        out.append(f"inline constexpr char32_t k{name}Data[{len(data)}] = {{")
        out.append(wrap([f"0x{c:X}" for c in data]))
        out.append("};\n")
    out.append("// What Python's str methods see of a code point (bits: 1 cased, 2 lowercase,")
    out.append("// 4 uppercase, 8 titlecase, 16 case-ignorable, 32 isdigit, 64 isnumeric, 128 isspace):")
    out.append("// a run starts at `first` and lasts until the next run.")
    out.append("struct StrPropertyRun {\n  uint32_t first;\n  uint8_t flags;\n};")
    out.append(f"inline constexpr StrPropertyRun kStrPropertyRuns[{len(str_props)}] = {{")
    out.append(wrap([f"{{0x{cp:X}, {f}}}" for cp, f in str_props]))
    out.append("};\n")
    out.append("// Canonical combining classes: a run starts at `first` and lasts until the next run.")
    out.append("struct CombiningClassRun {\n  uint32_t first;\n  uint8_t ccc;\n};")
    out.append(f"inline constexpr CombiningClassRun kCombiningClassRuns[{len(ccc_runs)}] = {{")
    out.append(wrap([f"{{0x{cp:X}, {c}}}" for cp, c in ccc_runs]))
    out.append("};\n")
    out.append("// Primary composites for NFC, sorted by (first, second); Hangul excluded.")
    out.append("struct Composition {\n  uint32_t first;\n  uint32_t second;\n  uint32_t composite;\n};")
    out.append(f"inline constexpr Composition kCompositions[{len(pairs)}] = {{")
    out.append(wrap([f"{{0x{a:X}, 0x{b:X}, 0x{c:X}}}" for a, b, c in pairs]))
    out.append("};\n")
    out.append("}  // namespace oxi::tokenizer::unicode_tables")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"{out_path}: {len(runs)} category runs, {len(nfd_rows)} decompositions, "
          f"{len(nfkd_rows)} compatibility decompositions, "
          f"{len(lower_rows)} lowercase, {len(upper_rows)} uppercase, {len(title_rows)} titlecase "
          f"mappings, {len(str_props)} str property runs")


if __name__ == "__main__":
    main()
