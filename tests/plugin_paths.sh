#!/bin/sh
# plugin_paths.sh MLP PLUGIN.so - issue 18: an example finds a plugin that
# lies nowhere near it, from any directory: by --plugin and by DISP_PLUGINS.
# The plugin is copied under another file name into a temporary directory,
# so the example's own guess (<bin>/../lib/lib<device>.so) cannot be what
# found it; the device is the name the plugin gives itself (openreg).
mlp=$1
so=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$so" "$tmp/libelsewhere.so"
cd "$tmp" || exit 1
fail=0
run() { # name, env..., then args after --
  name=$1; shift
  out=$(env "$@" --epochs 1 --steps 3 --threads 1 2>&1)
  if printf '%s\n' "$out" | grep -q "device openreg" && printf '%s\n' "$out" | grep -q '^test accuracy: '; then
    echo "PASS $name"
  else
    echo "FAIL $name"; printf '%s\n' "$out" | tail -5; fail=$((fail + 1))
  fi
}
run flag "$mlp" --plugin "$tmp/libelsewhere.so" --device openreg
run env DISP_PLUGINS="$tmp/libelsewhere.so" "$mlp" --device openreg
out=$("$mlp" --plugin "$tmp/missing.so" --device openreg 2>&1); rc=$?
if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -q "missing.so"; then echo "PASS missing_plugin_named"; else
  echo "FAIL missing_plugin_named"; fail=$((fail + 1)); fi
echo "$((3 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
