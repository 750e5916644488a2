#!/bin/sh
# check_isolation.sh PROG - the runner isolates cases: PROG
# (test_runner_isolation) must report its crashing and hanging cases as
# failures with their signal, run the cases after them, and exit 1.
prog=$1
out=$(DISP_TEST_TIMEOUT=2 ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" "$prog" 2>&1); rc=$?
printf '%s\n' "$out"
fail=0
expect() { printf '%s\n' "$out" | grep -q "$1" || { echo "MISSING: $1"; fail=1; }; }
expect '^ok   passes_first$'
expect 'crashes: killed by signal 11'
expect '^FAIL crashes$'
expect 'hangs: timed out after 2 s'
expect '^FAIL hangs$'
expect '^ok   sees_no_state_of_earlier_cases$'
expect '^2 passed, 2 failed$'
[ "$rc" -eq 1 ] || { echo "exit status $rc, expected 1"; fail=1; }
[ "$("$prog" --list | wc -l)" -eq 4 ] || { echo "--list does not list the 4 cases"; fail=1; }
[ $fail -eq 0 ] && echo "isolation: 1 passed, 0 failed" || echo "isolation: 0 passed, 1 failed"
exit $fail
