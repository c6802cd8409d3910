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
expect scalar scalar
case "$("$oxinfer" devices | sed -n 's/^ *features: *//p')" in
  *sse4.2*)
    expect sse42 sse4.2
    expect sse4.2 sse4.2
    ;;
esac
echo "OXI_ISA names: ok"
