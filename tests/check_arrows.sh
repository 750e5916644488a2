#!/bin/sh
# Module arrows (Note [Module arrows] in src/tensor/tensor_ref_internal.h):
# fails when a source file includes a header of a module it must not know.
#   base        -> nothing but disp/status.h and disp/export.h
#   dispatcher  -> base; of the tensor module only tensor/tensor_ref_internal.h
#   tensor      -> base; of the dispatcher only its public key, value and
#                  guard headers; never kernels or autograd
#   autograd    -> dispatcher and tensor public or _internal headers; never
#                  kernels' internals (aten_internal.h, tensor_iter.h, ...)
#   interop     -> base, tensor and the public key headers; never kernels,
#                  autograd or the concise API; nothing below includes it
#   runtime     -> anything; nothing includes the runtime's headers, and only
#                  the runtime names the built-in list (builtins_internal.h)
src=${1:-$(dirname "$0")/../src}
fail=0
# check DIR PATTERN WHY: any quoted #include in DIR matching PATTERN fails.
check() {
  hits=$(grep -n '^#include "' "$src/$1"/*.[ch] | grep -E "$2" || true)
  if [ -n "$hits" ]; then
    echo "$1 must not include ($3):"
    echo "$hits"
    fail=$((fail + 1))
  fi
}
kernel_headers=$(cd "$src/kernels" && ls *.h | tr '\n' '|' | sed 's/|$//')
dispatcher_private=$(cd "$src/dispatcher" && ls *_internal.h | tr '\n' '|' | sed 's/|$//')
check base "\"disp/(tensor|aten|call|dispatcher|library|schema|keyset|value|guard)|\"($dispatcher_private|$kernel_headers)\"" \
  'base uses nothing of the other modules'
check base '"(tensor|kernels|dispatcher|autograd)/' 'base uses nothing of the other modules'
check dispatcher '"disp/(tensor|tensor_util|aten|promotion|random|autocast)\.h"' 'tensor and kernel headers'
check dispatcher '"tensor/(tensor_internal|objcache|dtype_cast)|"kernels/|"autograd/' \
  'tensor internals beyond tensor_ref_internal.h'
check dispatcher "\"($kernel_headers)\"" 'kernels headers'
check tensor "\"kernels/|\"($kernel_headers)\"" 'kernels headers'
check tensor "\"($dispatcher_private)\"|\"dispatcher/" 'dispatcher internals'
check tensor '"disp/(call|dispatcher|library|schema|aten|autocast)\.h"' 'dispatcher or kernels API'
check autograd "\"($kernel_headers)\"|\"kernels/" 'kernels internals'
check interop "\"($kernel_headers)\"|\"kernels/|\"autograd/|\"api/|\"disp/(aten|easy|autograd)\\.h\"" \
  'interop uses the tensor module only'
for m in base dispatcher tensor kernels autograd; do
  check $m '"runtime/' 'the runtime sits above every module'
  check $m '"interop/' 'interop sits on top: nothing below uses it'
done
for m in base dispatcher tensor autograd; do
  check $m '"builtins_internal\.h"' 'only the runtime names the built-in list'
done
if [ "$fail" -ne 0 ]; then
  echo "0 passed, $fail failed"
  exit 1
fi
echo "module arrows: base, dispatcher, tensor, kernels, autograd and interop include only what they may"
exit 0
