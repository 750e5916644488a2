#!/bin/sh
# Fails when the shared library exports a symbol without the disp_ prefix
# (hidden visibility must keep internal disp__ helpers and everything else in).
lib=$1
[ -f "$lib" ] || { echo "no library at $lib"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_init$' | grep -v '^_fini$' | grep -v '^__odr_asan' | grep -v '^__asan')
# (sanitizer builds add __odr_asan.* twins of exported data symbols)
[ -n "$syms" ] || { echo "no exported symbols found"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v '^disp_' || true)
internal=$(printf '%s\n' "$syms" | grep '^disp__' || true)
count=$(printf '%s\n' "$syms" | wc -l)
if [ -n "$bad$internal" ]; then
  echo "exported symbols without the public disp_ prefix:"
  printf '%s\n' $bad $internal
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$count exported symbols, all prefixed disp_"
exit 0
