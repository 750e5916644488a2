#!/bin/sh
# openreg_mlp.sh MLP - issue 11: `mlp --device openreg` trains with the loss
# curve of the CPU run. Both run the same 30 steps from the same seed on one
# thread; every step's loss and the test accuracy must agree (1e-4 relative).
mlp=$1
steps=${OPENREG_MLP_STEPS:-30}
run() { "$mlp" --epochs 1 --steps "$steps" --loss-every 1 --threads 1 "$@"; }
cpu=$(run) || { echo "the CPU run failed"; exit 1; }
dev=$(run --device openreg) || { echo "the openreg run failed:"; echo "$dev"; exit 1; }
echo "step  cpu loss   openreg loss"
printf '%s\n' "$cpu" | grep '^epoch 1 step' | awk '{print $6}' > /tmp/openreg_mlp_cpu.$$
printf '%s\n' "$dev" | grep '^epoch 1 step' | awk '{print $6}' > /tmp/openreg_mlp_dev.$$
paste /tmp/openreg_mlp_cpu.$$ /tmp/openreg_mlp_dev.$$ | awk -v n="$steps" '
  { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1
    printf "%4d  %.6f   %.6f\n", NR, $1, $2
    if (d > 1e-4 * m + 1e-6) bad++ }
  END { if (NR != n) { print "expected " n " losses, got " NR; exit 1 }
        if (bad) { print bad " steps differ"; exit 1 } }'
rc=$?
rm -f /tmp/openreg_mlp_cpu.$$ /tmp/openreg_mlp_dev.$$
a=$(printf '%s\n' "$cpu" | tail -1) b=$(printf '%s\n' "$dev" | tail -1)
echo "cpu:     $a"
echo "openreg: $b"
[ "$rc" -eq 0 ] && [ "$a" = "$b" ] && case "$a" in "test accuracy: "*) exit 0 ;; esac
echo "FAIL"
exit 1
