#!/bin/sh
# check_tensor_fields.sh - fails when code outside src/tensor reads a field of
# struct disp_tensor or struct disp_storage directly instead of through the
# accessors of src/tensor/tensor_internal.h (Note [Tensor accessors]).
#
# A grep cannot tell t->ndim from another struct's ndim, so the compiler
# decides: the script copies the sources, renames every field of the two
# structs in the copy's tensor_internal.h, and compiles every translation
# unit outside src/tensor with -fsyntax-only. A field read anywhere else is
# then a "has no member named" error, reported with its file and line.
# (src/tensor itself owns the representation and is not checked.)
#
# Usage, from the repository root:  .ci/check_tensor_fields.sh [build-dir]
# build-dir (default build-fieldcheck) is configured with
# CMAKE_EXPORT_COMPILE_COMMANDS=ON and the generated sources are built there.
set -eu
root=$(pwd)
bdir=${1:-build-fieldcheck}
[ -f src/tensor/tensor_internal.h ] || { echo "run from the repository root" >&2; exit 2; }
if [ ! -f "$bdir/compile_commands.json" ]; then
  cmake -S . -B "$bdir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
cmake --build "$bdir" --target dispatch_generated >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R src include "$tmp/"

python3 - "$root" "$bdir" "$tmp" <<'PY'
import json, os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

root, bdir, tmp = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
hdr = os.path.join(tmp, 'src/tensor/tensor_internal.h')
text = open(hdr).read()

def rename(struct):
    """Suffix every member of `struct` so a read by its real name fails."""
    global text
    a = text.index('struct %s {' % struct)
    b = text.index('\n};', a)
    body = re.sub(r'\b([A-Za-z_]\w*)(\s*(\[[^]]*\])?\s*;)', r'\1_fieldcheck\2', text[a:b])
    body = re.sub(r'\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(', r'(*\1_fieldcheck)(', body)
    text = text[:a] + body + text[b:]

rename('disp_tensor')
rename('disp_storage')
open(hdr, 'w').write(text)

jobs, seen = [], set()
for e in json.load(open(os.path.join(bdir, 'compile_commands.json'))):
    f = os.path.abspath(os.path.join(e['directory'], e['file']))
    if f in seen or not os.path.exists(f):
        continue
    seen.add(f)
    rel = os.path.relpath(f, root)
    if rel.startswith('src/tensor/') or rel.startswith('..'):
        continue
    args = shlex.split(e['command']) if 'command' in e else list(e['arguments'])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == '-o':
            skip = True
            continue
        if a == '-c' or a.startswith('-Werror') or a.startswith('-fsanitize'):
            continue
        for d in ('src', 'include'):  # the copy, not the tree
            a = a.replace(os.path.join(root, d), os.path.join(tmp, d))
        out.append(a)
    out += ['-fsyntax-only', '-w']
    jobs.append((e['directory'], out, rel))

def run(job):
    r = subprocess.run(job[1], cwd=job[0], capture_output=True, text=True)
    return job[2], r.returncode, r.stderr

bad = []
with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
    for rel, rc, err in ex.map(run, jobs):
        for line in err.splitlines():
            if 'error' not in line:
                continue
            line = line.replace(tmp + '/', '').replace(root + '/', '')
            if line.startswith('src/tensor/'):
                continue  # the owner, and the accessors themselves
            bad.append(line)
bad = sorted(set(bad))
for line in bad:
    print(line)
if bad:
    print('check_tensor_fields: %d direct read(s) of disp_tensor/disp_storage fields outside src/tensor; '
          'use the accessors of src/tensor/tensor_internal.h (Note [Tensor accessors])' % len(bad))
    sys.exit(1)
print('check_tensor_fields: %d files outside src/tensor read tensors only through the accessors' % len(jobs))
PY
