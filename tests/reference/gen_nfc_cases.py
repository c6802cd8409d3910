#!/usr/bin/env python3
"""Writes tests/tokenizer/nfc_cases.json: strings and their NFC and NFKC forms by Python's
unicodedata (the reference for oxi::tokenizer::nfc and nfkc). Mixed from combining marks of several classes,
precomposed letters, Hangul jamo and syllables, singletons (U+212B), composition exclusions
(U+0958), non-starter decompositions (U+0344) and starter pairs that compose (U+0B47 U+0B3E).
Run from the source root with the Python that generated lib/tokenizer/unicode_tables.h
(the Unicode versions must agree):

    /usr/bin/python3 tests/reference/gen_nfc_cases.py
"""
import json
import os
import random
import unicodedata

POOL = ([chr(c) for c in range(0x300, 0x370)] + [chr(c) for c in range(0xC0, 0x180)] +
        [chr(c) for c in (0x1E00, 0x1E63, 0x1E69, 0x212B, 0x2126, 0x0958, 0x0344, 0x0F73,
                          0x0F77, 0x0B47, 0x0B3E, 0x0B57, 0x0DD9, 0x0DCF, 0x0DDF, 0x1100, 0x1161,
                          0x11A8, 0xAC00, 0xAC01, 0xD7A3, 0x1112, 0x1175, 0x11C2, 0x0323, 0x0301,
                          0x0327, 0x031B, 0x0345, 0x05B0, 0x05BC, 0x0591, 0x3099, 0x309A, 0x304B,
                          0x30AB, 0x0CBF, 0x0CD5, 0x1026, 0x102E, 0x11099, 0x110BA, 0x1D15E,
                          0x1D165, 0x1D16F, 0xFB2C, 0xFB1D, 0x2ADC, 0x1F00, 0x1FBE)] +
        list("aeoAEOU "))


def main():
    rng = random.Random(15)
    texts = ["e\u0301", "A\u030A", "\u212B", "\u0958", "a\u0323\u0301", "a\u0301\u0323",
             "\u1100\u1161\u11A8", "\uAC00\u11A8", "\u0B47\u0B3E", "\u0344", "caf\u00E9",
             "Qu\u0065\u0301bec \u1112\u1161\u11AB\u1100\u1173\u11AF", "\u0301abc"]
    texts += ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 8))) for _ in range(400)]
    # compatibility characters (for NFKC): ligatures, super- and subscripts, circled and
    # full- / half-width forms (a half-width voiced mark composes with the kana before it),
    # letterlike symbols, fractions, compatibility jamo, the ideographic space, long s with dot
    rng_compat = random.Random(16)
    pool = [chr(c) for c in (0xFB01, 0xFB03, 0xB2, 0xB3, 0xB9, 0x2460, 0x338F, 0xFF76, 0xFF9E,
                             0xFF9F, 0xFF71, 0xFF21, 0xFF41, 0xFF05, 0x210C, 0x216B, 0xBD, 0x2026,
                             0x1C5, 0x212B, 0x2126, 0x2122, 0x2103, 0x3231, 0x2075, 0x2082, 0x17F,
                             0x1E9B, 0xFE35, 0xFE4F, 0x3000, 0x3131, 0x314F, 0xFFA1, 0xFFC2,
                             0x30AB, 0x3099, 0x309A, 0x301, 0x323, 0x1D400, 0x1F130, 0xA0, 0xAA)]
    pool += list("aeoAK ")
    texts += ["".join(rng_compat.choice(pool) for _ in range(rng_compat.randint(1, 8)))
              for _ in range(300)]
    cases = [{"text": t, "nfc": unicodedata.normalize("NFC", t),
              "nfkc": unicodedata.normalize("NFKC", t)} for t in texts]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "tokenizer", "nfc_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"unicode_version": unicodedata.unidata_version, "cases": cases}, f,
                  ensure_ascii=False, indent=0)
        f.write("\n")
    changed = sum(c["text"] != c["nfc"] for c in cases)
    changed_k = sum(c["text"] != c["nfkc"] for c in cases)
    print(f"wrote {len(cases)} cases ({changed} changed by NFC, {changed_k} by NFKC) to {path}")


if __name__ == "__main__":
    main()
