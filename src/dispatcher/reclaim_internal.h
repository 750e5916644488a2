/*
 * reclaim_internal.h - freeing what lock-free readers may still hold.
 *
 * Note [Reclaiming retired tables]
 * Calls read an operator's published table, and the kernel entries its
 * cells point at, without a lock (Note [Lock-free tables]). A registration
 * change publishes a new table and retires the old one; it may be freed only
 * when no call can still be reading it. libdispatch uses the sequence-counter
 * form of userspace RCU with membarrier(2) (Desnoyers, McKenney, Stern,
 * Dagenais and Walpole, "User-Level Implementations of Read-Copy Update",
 * IEEE TPDS 23(2), 2012, the "memb" flavour):
 *
 *   reader  (every lookup: disp__read_begin/disp__read_end, inline in
 *            disp/call.h) increments a thread-local counter before the
 *            lookup and again after it has copied the kernel slot out, so
 *            the counter is even exactly while the thread reads a table.
 *            No fence, no atomic read-modify-write: two plain stores.
 *   writer  (under the registry lock) detaches the retired list, calls
 *            membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every
 *            running thread of the process execute a full barrier, then
 *            reads every registered reader's counter: odd means idle (any
 *            later lookup sees the new tables), even means it is inside a
 *            lookup; the writer waits a bounded time for that counter to
 *            move. Then nothing retired before the barrier is reachable and
 *            the batch is freed. A reader that does not move in time (a
 *            stopped thread) defers the batch to the next attempt: memory
 *            waits, nobody blocks.
 * The read side spans the lookup only, never the kernel: the call copies the
 * slot (function pointers, flags, user_data) out of the entry before it
 * leaves, so a kernel may run for minutes and registrations may happen inside
 * kernels. A thread's first lookup registers it (the counter starts at
 * UINT64_MAX, so the first increment gives 0 and takes the slow path);
 * thread exit unregisters it. Without membarrier (old kernels, some
 * sandboxes, valgrind) nothing is freed before disp_shutdown, as before.
 */
#ifndef DISP_RECLAIM_INTERNAL_H
#define DISP_RECLAIM_INTERNAL_H

#include <stddef.h>

/* Precondition for the three below: the registry lock is held. */

/* Hands `p` to the reclaimer: free_fn(p) runs once no reader can hold it.
 * Never fails: without memory for the record it waits for the readers and
 * frees `p` at once (kept forever only when a reader is stuck or the
 * system lacks membarrier: never freed under a reader). */
void disp__retire(void *p, void (*free_fn)(void *));

/* Frees what no reader can still hold, when enough has been retired for a
 * barrier to pay (`force`: whenever anything is retired). */
void disp__reclaim(int force);

/* Frees everything retired, readers or not: only for disp_shutdown, when no
 * call may run. */
void disp__reclaim_all_at_shutdown(void);

/* Objects retired and not yet freed (tests and benchmarks). */
size_t disp__reclaim_pending(void);

#endif
