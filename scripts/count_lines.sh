#!/bin/sh
# count_lines.sh - the line counts README.md's table of the concise examples
# and their libtorch C++ twins (examples/twins/) shows, measured rather than
# typed in. A line counts when it holds code: blank lines and lines that are
# only comment (// ..., /* ... */, or inside a block comment) do not.
#
#   scripts/count_lines.sh              the table (markdown), from the repo root
#   scripts/count_lines.sh FILE [NAME]  the count of FILE, or of its region
#                                       between "count:NAME" and "count:end"
set -eu

count() { # FILE [REGION]
  awk -v region="${2:-}" '
    region != "" && index($0, "count:" region) { on = 1; next }
    region != "" && index($0, "count:end") { on = 0; next }
    region != "" && !on { next }
    {
      line = $0
      if (inblock) {
        if (index(line, "*/")) { line = substr(line, index(line, "*/") + 2); inblock = 0 } else next
      }
      while (match(line, /\/\*/)) {
        rest = substr(line, RSTART + 2)
        if (index(rest, "*/")) line = substr(line, 1, RSTART - 1) substr(rest, index(rest, "*/") + 2)
        else { line = substr(line, 1, RSTART - 1); inblock = 1 }
      }
      sub(/\/\/.*/, "", line)
      if (line ~ /[^ \t]/) n++
    }
    END { print n + 0 }' "$1"
}

if [ $# -gt 0 ]; then
  count "$@"
  exit 0
fi
ex=examples
tw=examples/twins
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3"; }
echo "| program | libdispatch C (concise API) | libtorch C++ |"
echo "|---|---|---|"
row "hello world (whole file)" "$(count $ex/hello.c)" "$(count $tw/hello.cpp)"
row "MLP network" "$(count $ex/models.c mlp_net)" "$(count $tw/mlp.cpp mlp_net)"
row "CNN network" "$(count $ex/models.c cnn_net)" "$(count $tw/cnn.cpp cnn_net)"
row "training step (forward, loss, backward, Adam)" "$(count $ex/train.c step)" "$(count $tw/fmnist_torch.h step)"
row "test accuracy" "$(count $ex/train.c accuracy)" "$(count $tw/fmnist_torch.h accuracy)"
