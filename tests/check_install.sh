#!/bin/sh
# Installs the build into a temporary prefix, then builds a consumer with
# find_package(dispatch) and one with pkg-config, and runs both.
set -e
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir -p "$tmp/app"
cat > "$tmp/app/app.c" <<'C'
#include <disp.h>
#include <stdio.h>
int main(void) {
  const disp_op *op;
  if (disp_op_find("aten::add.Tensor", &op) != DISP_OK) { puts(disp_last_error()); return 1; }
  printf("%s %s\n", disp_version_string(), disp_op_name(op));
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
C
pass=0
cmake -S "$tmp/app" -B "$tmp/app/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app/b" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libdispatch.so' | head -1)")
LD_LIBRARY_PATH="$libdir" "$tmp/app/b/app" | grep -q 'aten::add.Tensor' && pass=$((pass+1)) && echo "PASS find_package"
pc=$(find "$tmp/prefix" -name dispatch.pc | head -1)
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs dispatch)
cc -o "$tmp/app/app_pc" "$tmp/app/app.c" $flags
LD_LIBRARY_PATH="$libdir" "$tmp/app/app_pc" | grep -q 'aten::add.Tensor' && pass=$((pass+1)) && echo "PASS pkg-config"
echo "$pass passed, $((2 - pass)) failed"
[ "$pass" -eq 2 ]
