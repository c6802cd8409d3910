#!/bin/sh
# OXI_ISA lowers the kernel instruction set by its name or short form ("sse4.2" or "sse42"),
# as README.md says; `oxinfer devices` shows the set in use. Usage: isa_override.sh OXINFER
set -e
oxinfer="$1"
isa_of() { OXI_ISA="$1" "$oxinfer" devices | sed -n 's/^ *kernel ISA: *//p'; }
expect() {
  got="$(isa_of "$1")"
  [ "$got" = "$2" ] || { echo "OXI_ISA=$1: kernel ISA '$got', expected '$2'"; exit 1; }
}
features="$("$oxinfer" devices | sed -n 's/^ *features: *//p')"
expect scalar scalar
case "$features" in
  *sse4.2*)
    expect sse42 sse4.2
    expect sse4.2 sse4.2
    ;;
esac
case "$features" in
  *"avx2 fma f16c"*)
    expect avx2 avx2+fma+f16c
    expect avx2+fma+f16c avx2+fma+f16c
    ;;
esac
# the avx512 set, where this CPU has it, is the default and lowers to avx2
case "$features" in
  *avx512f*avx512bw*avx512vl*avx512dq*avx512vnni*)
    expect "" avx512+vnni
    expect avx512 avx512+vnni
    expect avx2 avx2+fma+f16c
    ;;
esac
# on 64-bit ARM, neon_dotprod (where the CPU has dotprod) lowers to neon
case "$features" in
  *neon*dotprod*)
    expect "" neon_dotprod
    expect neon neon
    ;;
  *neon*)
    expect "" neon
    ;;
esac
echo "OXI_ISA names: ok"
