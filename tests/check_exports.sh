#!/bin/sh
# Checks the shared library's dynamic symbols both ways:
#  - exports: every exported symbol has the public disp_ prefix (hidden
#    visibility keeps internal disp__ helpers and everything else in);
#  - imports: no undefined weak symbol (a weak reference is one any loaded
#    object may fill, or nobody: issue 8 case 18), and every undefined symbol
#    is defined by one of the libraries the library may depend on.
lib=$1
[ -f "$lib" ] || { echo "no library at $lib"; exit 1; }
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1"; fail=$((fail + 1)); }

# The libraries libdispatch.so may need: libc, libm, pthread and libdl (all
# glibc), the dynamic loader (__tls_get_addr), libffi, jansson (safetensors
# headers, src/interop/), CBLAS (OpenBLAS or
# another CBLAS), SLEEF, the OpenMP runtime of the compiler (GCC's libgomp,
# LLVM's libomp for clang builds), and the sanitizer runtimes of
# DISP_SANITIZE / DISP_TSAN.
allowed_libs='libc.so libm.so libpthread.so libdl.so ld-linux libffi.so libjansson.so libopenblas.so libcblas.so libblas.so
              libsleef.so libgomp.so libomp.so libasan.so libubsan.so libtsan.so'
# Weak references the C runtime's start files (crtbegin/crti) put in every
# shared object; none comes from libdispatch's code.
crt_weak='_ITM_deregisterTMCloneTable _ITM_registerTMCloneTable __gmon_start__ __cxa_finalize'

in_list() { # WORD LIST
  for w in $2; do [ "$w" = "$1" ] && return 0; done
  return 1
}

allowed_lib() { # NAME
  for a in $allowed_libs; do
    case $1 in "$a"*) return 0 ;; esac
  done
  return 1
}

# ---- exports --------------------------------------------------------------
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_init$' | grep -v '^_fini$' | grep -v '^__odr_asan' | grep -v '^__asan')
# (sanitizer builds add __odr_asan.* twins of exported data symbols)
bad=$(printf '%s\n' "$syms" | grep -v '^disp_' || true)
# (fault-injection builds, for tests only, export disp__fault_*: Note [Allocation seam])
internal=$(printf '%s\n' "$syms" | grep '^disp__' | grep -v '^disp__fault_' || true)
count=$(printf '%s\n' "$syms" | wc -l)
if [ -z "$syms" ]; then
  ko "no exported symbols found"
elif [ -n "$bad$internal" ]; then
  ko "exported symbols without the public disp_ prefix:"
  printf '  %s\n' $bad $internal
else
  ok "$count exported symbols, all prefixed disp_"
fi

# ---- needed libraries -----------------------------------------------------
needed=$(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
unexpected=""
for n in $needed; do allowed_lib "$n" || unexpected="$unexpected $n"; done
if [ -n "$unexpected" ]; then ko "needs libraries outside the allowed list:$unexpected"
else ok "needs only allowed libraries: $(echo $needed)"; fi

# ---- undefined weak symbols -----------------------------------------------
weak=""
for s in $(nm -D --undefined-only "$lib" | awk '$1 == "w" || $1 == "v" {print $2}' | sed 's/@.*//'); do
  in_list "$s" "$crt_weak" || weak="$weak $s"
done
if [ -n "$weak" ]; then
  ko "undefined weak symbols (anything loaded may fill them, or nothing):"
  printf '  %s\n' $weak
else
  ok "no undefined weak symbols besides the C runtime's"
fi

# ---- every undefined symbol comes from a needed, allowed library ----------
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
ldd "$lib" | while read -r name arrow path _; do
  # "libm.so.6 => /lib/.../libm.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
  [ "$arrow" = "=>" ] || path=$name
  base=$(basename "$name")
  allowed_lib "$base" && in_list "$base" "$needed" && [ -f "$path" ] &&
    nm -D --defined-only "$path" | awk '{print $3}' | sed 's/@.*//'
done | sort -u > "$tmp"
orphans=""
for s in $(nm -D --undefined-only "$lib" | awk '$1 == "U" {print $2}' | sed 's/@.*//'); do
  grep -qxF "$s" "$tmp" || orphans="$orphans $s"
done
if [ -n "$orphans" ]; then
  ko "undefined symbols no allowed library defines:"
  printf '  %s\n' $orphans
else
  ok "$(nm -D --undefined-only "$lib" | awk '$1 == "U"' | wc -l) undefined symbols, each defined by an allowed library"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
