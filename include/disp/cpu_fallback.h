/*
 * disp/cpu_fallback.h - running an operator a backend lacks on the CPU.
 *
 * PyTorch 1.13's cpu_fallback (aten/src/ATen/native/CPUFallback.cpp) as a
 * boxed kernel. A backend registers it once for every operator it has no
 * kernel for:
 *
 *   DISP_LIBRARY_IMPL(_, PRIVATEUSE1, m) {
 *     disp_library_fallback(m, disp_cpu_fallback_kernel(DISP_CPU_FALLBACK_WARN), NULL);
 *   }
 *
 * or for one operator, as that operator's kernel on its key (the per-operator
 * route; it also beats a CompositeExplicitAutogradNonFunctional kernel):
 *
 *   disp_library_impl(m, "cat", disp_cpu_fallback_kernel(0), NULL);
 *
 * What a call does, in 1.13's steps:
 *   1. every tensor argument (Tensor, Tensor?, each element of Tensor[] and
 *      Tensor?[]) is moved to the CPU with dispatched operators (to.device,
 *      i.e. the backend's own empty_strided and _copy_from do the copy: the
 *      library never reads device memory); CPU tensors pass unchanged; a
 *      `Device` argument (factories) becomes cpu and names the device the
 *      results go to;
 *   2. the operator is redispatched with the key set {CPU};
 *   3. every argument the schema marks written (`Tensor(a!)`, in-place self
 *      and out= arguments, lists too) gets the CPU result copied back with
 *      the dispatched copy_ (with _copy_from_and_resize, as 1.13 always
 *      does, when the CPU kernel resized it);
 *   4. returns: one that aliases a written argument is that argument itself
 *      (the caller's own tensor); every other tensor goes back with
 *      to.device to the target device - the Device argument's, else the
 *      first tensor argument's, else the first element of the first
 *      non-empty Tensor[] (1.13's compute_target_device), else they stay on
 *      the CPU (cat of an empty list).
 * A view operator (a return aliasing an input without `!`, e.g.
 * `view(Tensor(a) self, ...) -> Tensor(a)`) cannot share storage across
 * devices, so it returns a copy; 1.13 warns each time ("The operator
 * aten::view appears to be a view operator, but it has no implementation
 * for the backend "privateuseone:0". View operators don't support falling
 * back to run on the CPU, since the tensor's storage cannot be shared
 * across devices."), DISP_CPU_FALLBACK_ERROR_ON_VIEWS refuses instead.
 *
 * Note [The CPU fallback's stack]
 * The caller's stack is only read until the call has succeeded: the moves
 * and the CPU call work on the fallback's own stack, and only then are the
 * arguments replaced by the returns. On every error the caller's stack
 * holds exactly what it held (the same values, reference counts unchanged),
 * and every tensor the fallback made is released; written arguments
 * already copied back before a later step failed keep their new contents.
 */
#ifndef DISP_CPU_FALLBACK_H
#define DISP_CPU_FALLBACK_H

#include "dispatcher.h"
#include "export.h"
#include "keyset.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of the CPU fallback (the kernel's user_data, see
 * disp_cpu_fallback_kernel). */
enum {
  /* Warn once per operator that it fell back (1.13's MPS fallback words it:
   * "The operator 'aten::foo' is not currently supported on the PrivateUse1
   * backend and will fall back to run on the CPU. This may have performance
   * implications."). Once per operator name and process, as TORCH_WARN_ONCE. */
  DISP_CPU_FALLBACK_WARN = 1u << 0,
  /* Refuse view operators (DISP_ERR_NO_KERNEL, before anything runs)
   * instead of warning and returning a copy. */
  DISP_CPU_FALLBACK_ERROR_ON_VIEWS = 1u << 1
};

/*
 * disp_cpu_fallback - the boxed kernel: runs `op` on the CPU for a call
 * that dispatched to `ks` (its highest key names the backend in messages),
 * as described at the top of this header. `user_data` holds the options
 * as an integer ((void *)(uintptr_t)flags; NULL: none), which is what
 * disp_cpu_fallback_kernel stores; a backend's own boxed fallback may call
 * it directly, as 1.13's MPS fallback calls cpu_fallback.
 * Errors, each leaving the stack as given (Note [The CPU fallback's
 * stack]):
 *   DISP_ERR_INVALID_ARG - NULL op or stack ("disp_cpu_fallback: op is
 *     NULL"); unknown option bits; an operator without a schema or with
 *     varargs; fewer values on the stack than the schema's arguments; a key
 *     set of the CPU itself ("... reached the CPU fallback on the CPU key:
 *     it would run itself again"); tensors on two devices other than the
 *     CPU ("Expected all tensors to be on the same device, but found at
 *     least two devices, privateuseone:0 and privateuseone:1!");
 *   DISP_ERR_NO_KERNEL - a view operator with DISP_CPU_FALLBACK_ERROR_ON_VIEWS;
 *     the fallback reached again while it moves tensors (the backend lacks
 *     a kernel that moving data needs, e.g. _copy_from: it would recurse
 *     forever); the CPU has no kernel either (the dispatcher's "Could not
 *     run 'aten::foo' with arguments from the 'CPU' backend");
 *   DISP_ERR_KERNEL - a written return that aliases no written argument
 *     (1.13's "The operator aten::foo appears to have invalid alias
 *     information. Found a return tensor argument with a mismatched mutable
 *     alias: Tensor(b!)");
 *   whatever a move or the CPU kernel reported.
 * Thread-safe (each call works on its own values).
 */
DISP_API disp_status disp_cpu_fallback(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                       void *user_data);

/*
 * disp_cpu_fallback_kernel - the fallback as a kernel value, with options
 * `flags` (DISP_CPU_FALLBACK_*), for disp_library_fallback (every operator
 * of a key) or disp_library_impl / disp_library_impl_key (one operator).
 * Holds nothing to free (destroy is NULL), so a failed registration leaks
 * nothing. Unknown bits are refused when the kernel runs. Thread-safe.
 */
DISP_API disp_kernel disp_cpu_fallback_kernel(unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* DISP_CPU_FALLBACK_H */
