/*
 * disp.h - libdispatch, PyTorch's operator dispatcher as a C11 library.
 *
 * The umbrella header: include this one. Behind it, one header per module:
 *   disp/status.h      status codes, the thread-local error message, warnings
 *   disp/version.h     version macros and disp_version()
 *   disp/keyset.h      dispatch keys and key sets (PyTorch's factored uint64)
 *   disp/tensor.h      dtypes, devices, allocators, storage, tensors
 *   disp/backend.h     what a backend provides and gets: device hooks, guards,
 *                      copies, generators, metadata setters, memory statistics
 *   disp/schema.h      operator schemas: parse and print PyTorch's grammar
 *   disp/dispatcher.h  operators, kernels, dispatch tables, dumps
 *   disp/library.h     DISP_LIBRARY / _FRAGMENT / _IMPL registration
 *   disp/value.h       boxed values, stacks, the C types of unboxed kernels
 *   disp/call.h        calling operators: boxed, unboxed, redispatch, trace
 *   disp/guard.h       thread-local dispatch state (include/exclude, modes)
 *   disp/autocast.h    autocast (mixed precision): state, regions, cast helpers
 *   disp/autograd.h    gradients: requires_grad, grad_fn, hooks, backward, grad
 *   disp/function.h    custom autograd functions (forward/backward callbacks, ctx)
 *   disp/aten.h        typed entry points of the built-in operators (generated)
 *   disp/aten_impl.h   type-checked kernel registration for them (DISP_IMPL_ATEN)
 *   disp/promotion.h   PyTorch's type promotion (result_type)
 *   disp/random.h      the seed of every device's random generator
 *   disp/tensor_util.h printing tensors, allclose
 *   disp/cpu.h         intra-op threads and the SIMD capability of CPU kernels
 *   disp/plugin.h      backend plugins: load, attribute, unload (DISP_PLUGINS)
 *   disp/cpu_fallback.h  PyTorch's cpu_fallback: run what a backend lacks on the CPU
 *   disp/stub.h        inner loops a backend registers instead of whole kernels
 *   disp/easy.h        the concise face: operators returning results, tensors
 *                      from C data, scopes, options by name (programs start here)
 *   disp/safetensors.h checkpoints: named tensors saved and loaded as safetensors
 *
 * Conventions: every fallible call returns a disp_status and writes results
 * through out-parameters; disp_last_error() says what went wrong, worded as
 * PyTorch words it. Every declaration says whether it returns a new or a
 * borrowed reference and whether it is thread-safe. A NULL where a pointer is
 * expected never crashes an exported function: status.h's Note [NULL arguments] is the one rule
 * (a status function refuses it with DISP_ERR_INVALID_ARG naming function
 * and argument, a pointer function returns NULL, an accessor returns a
 * harmless value, release and clear functions do nothing).
 */
#ifndef DISP_H
#define DISP_H

#include "disp/export.h"
#include "disp/status.h"
#include "disp/version.h"
#include "disp/keyset.h"
#include "disp/tensor.h"
#include "disp/backend.h"
#include "disp/schema.h"
#include "disp/dispatcher.h"
#include "disp/library.h"
#include "disp/value.h"
#include "disp/call.h"
#include "disp/guard.h"
#include "disp/autocast.h"
#include "disp/autograd.h"
#include "disp/function.h"
#include "disp/gradcheck.h"
#include "disp/aten.h"
#include "disp/aten_impl.h"
#include "disp/promotion.h"
#include "disp/random.h"
#include "disp/tensor_util.h"
#include "disp/cpu.h"
#include "disp/plugin.h"
#include "disp/cpu_fallback.h"
#include "disp/optim.h"
#include "disp/stub.h"
#include "disp/easy.h"
#include "disp/safetensors.h"

#endif /* DISP_H */
