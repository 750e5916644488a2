#!/bin/sh
# Installs the build into a temporary prefix (not a system one), then:
#  - builds consumers with find_package(dispatch), against dispatch::dispatch
#    and dispatch::dispatch_static, and with pkg-config, shared and --static,
#    each calling a built-in operator (add) and checking the result;
#  - runs the installed disp from the prefix with no LD_LIBRARY_PATH: it finds
#    the library through its RUNPATH (issue 8 case 20).
# The static consumers link libdispatch.a as any archive, without
# --whole-archive (issue 8 case 18).
set -e
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir -p "$tmp/app"
cat > "$tmp/app/app.c" <<'C'
#include <disp.h>
#include <disp/aten.h>
#include <stdio.h>
/* add(a, a, alpha=2) on {1.5, -2}: {4.5, -6}. */
static disp_status add_twice(disp_tensor **r) {
  int64_t size = 2;
  disp_tensor *a = NULL;
  disp_status st = disp_tensor_empty(&size, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &a);
  if (st != DISP_OK) return st;
  float *x = disp_tensor_data_ptr(a);
  x[0] = 1.5f;
  x[1] = -2.0f;
  st = disp_aten_add_Tensor(a, a, disp_scalar_int(2), r);
  disp_tensor_release(a);
  return st;
}

int main(void) {
  const disp_op *op;
  disp_tensor *r = NULL;
  if (disp_op_find("aten::add.Tensor", &op) != DISP_OK || add_twice(&r) != DISP_OK) {
    puts(disp_last_error());
    return 1;
  }
  const float *x = disp_tensor_data_ptr(r);
  printf("%s %s = %g %g\n", disp_version_string(), disp_op_name(op), x[0], x[1]);
  disp_tensor_release(r);
  disp_shutdown();
  return 0;
}
C
cat > "$tmp/app/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(dispatch REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE dispatch::dispatch)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE dispatch::dispatch_static)
C
pass=0
fail=0
# NAME PROGRAM: passes when PROGRAM prints add's result.
check() {
  if out=$("$2" 2>&1) && printf '%s\n' "$out" | grep -q 'aten::add.Tensor = 4.5 -6$'; then
    echo "PASS $1"; pass=$((pass + 1))
  else
    echo "FAIL $1: $out"; fail=$((fail + 1))
  fi
}
# NAME PROGRAM: passes when PROGRAM carries libdispatch itself (no libdispatch.so needed).
check_static() {
  if readelf -dW "$2" | grep -q 'NEEDED.*libdispatch'; then
    echo "FAIL $1: needs the shared library"; fail=$((fail + 1))
  else
    check "$1" "$2"
  fi
}

cmake -S "$tmp/app" -B "$tmp/app/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app/b" >/dev/null
check "find_package dispatch::dispatch" "$tmp/app/b/app"
check_static "find_package dispatch::dispatch_static" "$tmp/app/b/app_static"

pc=$(find "$tmp/prefix" -name dispatch.pc | head -1)
libdir=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
cc -o "$tmp/app/app_pc" "$tmp/app/app.c" $(pkg-config --cflags --libs dispatch) -Wl,-rpath,"$libdir"
check "pkg-config" "$tmp/app/app_pc"
# With both libraries installed, -ldispatch means the shared one: name the archive.
static_flags=$(pkg-config --static --cflags --libs dispatch | sed 's/-ldispatch\b/-l:libdispatch.a/')
cc -o "$tmp/app/app_pc_static" "$tmp/app/app.c" $static_flags
check_static "pkg-config --static" "$tmp/app/app_pc_static"

disp=$tmp/prefix/bin/disp
if out=$("$disp" --version 2>&1) && [ "$(echo "$out" | head -1)" = "disp (libdispatch) $(pkg-config --modversion dispatch)" ]; then
  echo "PASS installed disp --version"; pass=$((pass + 1))
else
  echo "FAIL installed disp --version: $out"; fail=$((fail + 1))
fi
if out=$("$disp" table aten::add.Tensor 2>&1) && printf '%s\n' "$out" | grep -q '^CPU: registered at .* \[kernel\]$'; then
  echo "PASS installed disp table aten::add.Tensor"; pass=$((pass + 1))
else
  echo "FAIL installed disp table aten::add.Tensor: $out"; fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
