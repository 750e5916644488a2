/*
 * devtest.h - device-generic tests (PyTorch's instantiate_device_type_tests
 * for C): each test is written once against a device and run for every
 * available one - the CPU, Meta where only shapes matter, and the device of
 * each loaded plugin - computing the same thing on the CPU as the reference.
 * `disp test` runs them (devtest_cmd.c).
 *
 * A test gets a dt_ctx naming the device and its tolerances, makes CPU
 * tensors, moves them with dt_on (dispatched copies: the device's own
 * kernels), computes on both sides and compares with dt_close (the device
 * result copied back through dispatched ops: the harness never reads device
 * memory). Everything a test makes is registered with dt_keep and released
 * after it, whatever path it took.
 */
#ifndef DISP_TOOLS_DEVTEST_H
#define DISP_TOOLS_DEVTEST_H

#include <disp.h>

#define DT_MAX_OWNED 256

typedef struct dt_ctx {
  disp_device dev;  /* the device under test */
  disp_dtype dtype; /* the floating dtype of this instance (dt_rand makes it) */
  int shapes_only;  /* Meta: compare dtype and sizes, not values */
  double rtol, atol; /* this device's tolerance for dtype */
  int failed;
  char msg[512];    /* the first failure */
  disp_tensor *owned[DT_MAX_OWNED];
  size_t nowned;
} dt_ctx;

/* A test: 0 passed (or failed: c->failed set), DT_SKIP when it does not
 * apply to c->dev (the reason in c->msg). */
enum { DT_SKIP = 2 };
typedef int (*dt_fn)(dt_ctx *c);

/* What a test needs of the device (per-device skips), and the dtypes it is
 * instantiated for (PyTorch's @dtypes; none named: float32 and float64). */
enum {
  DT_VALUES = 1u << 0, /* reads values: not on Meta */
  DT_F32_ONLY = 1u << 1 /* float32 only (the default dtype of a factory) */
};

typedef struct dt_test {
  const char *suite; /* "ops", "autograd", "optim" */
  const char *name;
  dt_fn fn;
  unsigned needs;
} dt_test;

/* The suites (devtest_ops.c, devtest_autograd.c, devtest_optim.c). */
extern const dt_test dt_ops_tests[];
extern const dt_test dt_autograd_tests[];
extern const dt_test dt_optim_tests[];
extern const size_t dt_ops_count, dt_autograd_count, dt_optim_count;

/* ---- helpers (devtest.c) ------------------------------------------------ */

/* Records a failure (the first message is kept); returns 0. */
int dt_fail(dt_ctx *c, const char *fmt, ...) DISP_PRINTF(2, 3);
/* 1 when st is DISP_OK, else records "what: <last error>" and returns 0. */
int dt_ok(dt_ctx *c, disp_status st, const char *what);
/* Takes t's reference into the test's list; returns t. */
disp_tensor *dt_keep(dt_ctx *c, disp_tensor *t);
/* A CPU tensor of c->dtype and the sizes with values drawn from a fixed
 * stream (seed), in [-1, 1); NULL after a failure. */
disp_tensor *dt_rand(dt_ctx *c, const int64_t *sizes, int ndim, uint64_t seed);
/* cpu on the device under test (aten::to.device, dispatched); NULL after a
 * failure. */
disp_tensor *dt_on(dt_ctx *c, disp_tensor *cpu);
/* The device tensor back on the CPU (dispatched); NULL after a failure. */
disp_tensor *dt_cpu(dt_ctx *c, disp_tensor *t);
/* got (on the device under test) against want (CPU): same dtype and sizes,
 * and unless shapes_only, values within the tolerance. 1 when they agree. */
int dt_close(dt_ctx *c, const char *what, disp_tensor *got, disp_tensor *want);

/* Calls `call` (a disp_status expression); on failure records it and
 * returns from the test. */
#define DT_TRY(c, call)                  \
  do {                                   \
    if (!dt_ok((c), (call), #call)) return 1; \
  } while (0)

#define DT_SIZES(...) ((const int64_t[]){__VA_ARGS__})
#define DT_LIST(...) ((disp_int_list){DT_SIZES(__VA_ARGS__), sizeof(DT_SIZES(__VA_ARGS__)) / sizeof(int64_t)})

#endif
