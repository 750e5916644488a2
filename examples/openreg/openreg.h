/*
 * openreg.h - the emulated "openreg" device's internals, shared by the
 * plugin's files (not a public header of libdispatch).
 *
 * Note [Emulated device memory]: each of the two openreg devices owns one
 * arena of address space reserved with mmap and kept PROT_NONE, except
 * while one of the plugin's own kernels runs (or_enter / or_leave). So any
 * read of device memory by libdispatch itself - printing, comparing, a
 * CPU kernel handed a device pointer - faults at once in the tests, as it
 * would on a real accelerator. The plugin's kernels compute on the CPU:
 * inside or_enter they view device blocks as CPU tensors (or_view_as_cpu)
 * and run libdispatch's CPU kernels on them.
 */
#ifndef OPENREG_H
#define OPENREG_H

#include <stddef.h>

#include <disp.h>

#define OR_NUM_DEVICES 2

/* Reserves both arenas (once). DISP_OK or DISP_ERR_NO_MEMORY. */
disp_status or_memory_init(void);
/* Unmaps both arenas; every block must have been freed. */
void or_memory_shutdown(void);

/* The allocator (disp_allocator's functions). */
void *or_alloc(size_t nbytes, disp_device dev, void *ctx);
void or_free(void *ptr, size_t nbytes, disp_device dev, void *ctx);

/* Open and close device memory to the host; nest, any thread. */
void or_enter(void);
void or_leave(void);

/* Whether ptr lies in an arena (a device pointer). */
int or_is_device_ptr(const void *ptr);

/* Live bytes and blocks of a device (for the tests' leak checks). */
size_t or_live_bytes(int dev);

/*
 * or_wrap_cpu - inside or_enter: a CPU tensor over nbytes of device memory
 * at data (not owned: nothing is freed with it), with the given geometry.
 * New reference.
 */
disp_status or_wrap_cpu(void *data, size_t nbytes, int64_t offset, const int64_t *sizes, const int64_t *strides,
                        int ndim, disp_dtype dt, disp_tensor **out);

/*
 * or_view_as_cpu - inside or_enter: a CPU tensor over the memory of device
 * tensor t (same sizes, strides, offset, dtype). New reference. A CPU
 * tensor is returned retained as it is.
 */
disp_status or_view_as_cpu(disp_tensor *t, disp_tensor **out);

/*
 * or_to_device_like - inside or_enter: a new contiguous tensor on `dev`
 * holding the values of CPU tensor c. New reference.
 */
disp_status or_to_device(disp_tensor *c, disp_device dev, disp_tensor **out);

/* The calling thread's current openreg device (the device guard's). */
int or_current_device(void);

/* The device of the first openreg tensor among ts[0..n) (index 0 if none has one). */
disp_device or_device_of(disp_tensor *const *ts, int n);

/*
 * A native kernel's call on the CPU: or_begin opens device memory, leaves
 * autograd below (the kernel is already below it) and views every input
 * as a CPU tensor in in[]; the kernel calls a CPU operator on in[] into
 * `result` (status in st); or_end moves `result` to the inputs' device
 * into *out (or_end_inplace returns `self` instead, which the CPU operator
 * wrote through its view) and undoes the rest.
 */
#define OR_MAX_INPUTS 4
typedef struct or_call {
  disp_tensor *in[OR_MAX_INPUTS];
  int n;
  disp_device device;
  disp_tls_state saved;
  disp_tensor *result;
  disp_status st;
} or_call;

disp_status or_begin(or_call *c, disp_tensor *const *inputs, int n);
disp_status or_end(or_call *c, disp_tensor **out);
disp_status or_end_inplace(or_call *c, disp_tensor *self, disp_tensor **out);
disp_status or_end_none(or_call *c); /* a kernel without tensor result */

/* Registers openreg's abs and tanh loops (stubs.c). */
disp_status or_register_stubs(void);

/* How many times openreg's own threshold_backward ran (tests see that
 * autograd used the device's backward kernel). Exported. */
long openreg_threshold_backward_calls(void);

#endif
