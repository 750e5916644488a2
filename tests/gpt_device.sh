#!/bin/sh
# gpt_device.sh GPT_BINARY - `gpt --device openreg` (the emulated device of
# examples/openreg, loaded from the build's lib/) trains with the CPU run's
# losses: the same step from the same seed on one thread (its forward, then
# the val loss after its update: about 15 s on the emulated device). The model must
# report itself on the device, every step's loss must agree within 1e-6
# relative (the device's AdamW composes addcmul from two roundings where the
# CPU loop fuses them: Note [Optimizer rounding], last bits of exp_avg_sq),
# and the final val loss (4 decimals) within 1e-4.
set -u
gpt=$1
steps=${GPT_DEVICE_STEPS:-1}
run() { "$gpt" --steps "$steps" --eval-every 0 --eval-iters 1 --loss-every 1 --threads 1 "$@"; }
cpu=$(run) || { echo "the CPU run failed:"; echo "$cpu"; exit 1; }
dev=$(run --device openreg) || { echo "the openreg run failed:"; echo "$dev"; exit 1; }
printf '%s\n' "$dev" | grep -q '^model on openreg:0$' || { echo "the model is not on openreg:0:"; echo "$dev"; exit 1; }
losses() { printf '%s\n' "$1" | awk '/^step [0-9]+ loss / { print $2, $4 } /^val loss: / { print "val", $3 }'; }
losses "$cpu" >/tmp/gpt_device_cpu.$$
losses "$dev" >/tmp/gpt_device_dev.$$
echo "step  cpu          openreg"
paste -d' ' /tmp/gpt_device_cpu.$$ /tmp/gpt_device_dev.$$ | awk -v n="$steps" '
  { printf "%-5s %-12s %s\n", $1, $2, $4
    if ($1 != $3) { print "misaligned: " $0; bad++; next }
    d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2
    if ($1 == "val") { if (d > 1e-4) bad++ } else if (d > 1e-6 * m) bad++ }
  END { if (NR != n + 1) { print "expected " n " losses and a val loss, got " NR " lines"; exit 1 }
        if (bad) { print bad " values differ"; exit 1 } }'
rc=$?
rm -f /tmp/gpt_device_cpu.$$ /tmp/gpt_device_dev.$$
[ "$rc" -eq 0 ] && echo "openreg follows the CPU run" || echo "FAIL"
exit "$rc"
