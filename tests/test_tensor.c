/*
 * test_tensor.c - the tensor core: dtypes, devices, allocators, storage and
 * tensors, checked against PyTorch's behaviour (key sets, strides, messages).
 *
 * The PrivateUse1 rename is process-wide and set-once, so the case that
 * does it runs last; cases that print the PrivateUse1 name ask for it.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <disp.h>
#include <disp/guard.h>
#include <disp/tensor.h>

#include "tensor/tensor_internal.h"
#include "test.h"

static const char *fmt_keys(disp_keyset s) {
  static char buf[512];
  disp_keyset_format(s, buf, sizeof buf);
  return buf;
}

static const char *fmt_dev(disp_device d) {
  static char buf[64];
  disp_device_format(d, buf, sizeof buf);
  return buf;
}

static const disp_device cpu = {DISP_BACKEND_CPU, -1};
static const disp_device meta = {DISP_BACKEND_META, -1};
static const disp_device pu1 = {DISP_BACKEND_PRIVATEUSE1, 0};

/* ---- a counting allocator for PrivateUse1 ------------------------------ */

typedef struct counting {
  int allocs, frees;
  size_t live_bytes;
  int fail; /* return NULL from allocate */
} counting;

static void *count_allocate(size_t nbytes, disp_device dev, void *ctx) {
  counting *c = ctx;
  (void)dev;
  if (c->fail) return NULL;
  c->allocs++;
  c->live_bytes += nbytes;
  return malloc(nbytes ? nbytes : 1);
}

static void count_deallocate(void *ptr, size_t nbytes, disp_device dev, void *ctx) {
  counting *c = ctx;
  (void)dev;
  c->frees++;
  c->live_bytes -= nbytes;
  free(ptr);
}

/* ---- dtypes ------------------------------------------------------------ */

TEST(dtype_table) {
  static const struct {
    disp_dtype dt;
    const char *name, *torch;
    size_t size;
    int floating, integral, integral_with_bool, quantized;
  } want[] = {
      {DISP_DTYPE_FLOAT32, "float32", "Float", 4, 1, 0, 0, 0},
      {DISP_DTYPE_FLOAT64, "float64", "Double", 8, 1, 0, 0, 0},
      {DISP_DTYPE_FLOAT16, "float16", "Half", 2, 1, 0, 0, 0},
      {DISP_DTYPE_BFLOAT16, "bfloat16", "BFloat16", 2, 1, 0, 0, 0},
      {DISP_DTYPE_INT64, "int64", "Long", 8, 0, 1, 1, 0},
      {DISP_DTYPE_INT32, "int32", "Int", 4, 0, 1, 1, 0},
      {DISP_DTYPE_INT16, "int16", "Short", 2, 0, 1, 1, 0},
      {DISP_DTYPE_INT8, "int8", "Char", 1, 0, 1, 1, 0},
      {DISP_DTYPE_UINT8, "uint8", "Byte", 1, 0, 1, 1, 0},
      {DISP_DTYPE_BOOL, "bool", "Bool", 1, 0, 0, 1, 0},
      {DISP_DTYPE_QUINT8, "quint8", "QUInt8", 1, 0, 0, 0, 1},
  };
  ASSERT_EQ_INT(sizeof want / sizeof *want, DISP_DTYPE_COUNT);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    ASSERT_EQ_INT(want[i].dt, i);
    ASSERT_EQ_STR(disp_dtype_name(want[i].dt), want[i].name);
    ASSERT_EQ_STR(disp_dtype_torch_name(want[i].dt), want[i].torch);
    ASSERT_EQ_INT(disp_dtype_itemsize(want[i].dt), want[i].size);
    ASSERT_EQ_INT(disp_dtype_is_floating(want[i].dt), want[i].floating);
    ASSERT_EQ_INT(disp_dtype_is_integral(want[i].dt, 0), want[i].integral);
    ASSERT_EQ_INT(disp_dtype_is_integral(want[i].dt, 1), want[i].integral_with_bool);
    ASSERT_EQ_INT(disp_dtype_is_quantized(want[i].dt), want[i].quantized);
    disp_dtype back = DISP_DTYPE_COUNT;
    ASSERT_OK(disp_dtype_parse(want[i].name, &back));
    ASSERT_EQ_INT(back, want[i].dt);
    back = DISP_DTYPE_COUNT;
    ASSERT_OK(disp_dtype_parse(want[i].torch, &back));
    ASSERT_EQ_INT(back, want[i].dt);
  }
  ASSERT_EQ_STR(disp_dtype_name(DISP_DTYPE_COUNT), "UNKNOWN_DTYPE");
  ASSERT_EQ_INT(disp_dtype_itemsize((disp_dtype)-1), 0);
  return 0;
}

TEST(dtype_parse_aliases_and_errors) {
  disp_dtype dt;
  ASSERT_OK(disp_dtype_parse("torch.float", &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT32);
  ASSERT_OK(disp_dtype_parse("long", &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_INT64);
  ASSERT_OK(disp_dtype_parse("half", &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_OK(disp_dtype_parse("torch.quint8", &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_QUINT8);
  dt = DISP_DTYPE_BOOL;
  ASSERT_STATUS(disp_dtype_parse("float128", &dt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(dt, DISP_DTYPE_BOOL); /* untouched on error */
  ASSERT_EQ_STR(disp_last_error(),
                "Unknown dtype name: 'float128' (expected one of float32, float64, float16, "
                "bfloat16, int64, int32, int16, int8, uint8, bool, quint8)");
  /* ScalarType names are not valid after "torch." - torch.Float does not exist. */
  ASSERT_STATUS(disp_dtype_parse("torch.Float", &dt), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_dtype_parse(NULL, &dt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_layout_name(DISP_LAYOUT_SPARSE_COO), "sparse_coo");
  ASSERT_EQ_STR(disp_layout_name(DISP_LAYOUT_STRIDED), "strided");
  return 0;
}

/* ---- devices ----------------------------------------------------------- */

TEST(device_format_and_parse) {
  ASSERT_EQ_STR(fmt_dev(cpu), "cpu");
  ASSERT_EQ_STR(fmt_dev(disp_device_make(DISP_BACKEND_CUDA, 1)), "cuda:1");
  ASSERT_EQ_STR(fmt_dev(meta), "meta");
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_LAZY), "lazy");
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_VE), "ve");
  char small[4];
  ASSERT_EQ_INT(disp_device_format(disp_device_make(DISP_BACKEND_CUDA, 12), small, sizeof small), 7);
  ASSERT_EQ_STR(small, "cud");

  disp_device d;
  ASSERT_OK(disp_device_parse("cuda:1", &d));
  ASSERT_TRUE(disp_device_equal(d, disp_device_make(DISP_BACKEND_CUDA, 1)));
  ASSERT_OK(disp_device_parse("cpu", &d));
  ASSERT_TRUE(disp_device_equal(d, cpu));
  ASSERT_OK(disp_device_parse("cpu:0", &d));
  ASSERT_EQ_INT(d.index, 0);
  ASSERT_OK(disp_device_parse("meta", &d));
  ASSERT_EQ_INT(d.type, DISP_BACKEND_META);
  ASSERT_OK(disp_device_parse("xla:10", &d));
  ASSERT_TRUE(disp_device_equal(d, disp_device_make(DISP_BACKEND_XLA, 10)));
  ASSERT_OK(disp_device_parse("privateuseone:3", &d));
  ASSERT_TRUE(disp_device_equal(d, disp_device_make(DISP_BACKEND_PRIVATEUSE1, 3)));
  return 0;
}

TEST(device_parse_errors) {
  disp_device d = cpu;
  ASSERT_STATUS(disp_device_parse("foo", &d), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "Expected one of cpu, cuda, hip, xla, mps, ipu, xpu, hpu, ve, lazy, meta, ");
  ASSERT_CONTAINS(disp_last_error(), "privateuseone");
  ASSERT_CONTAINS(disp_last_error(), " device type at start of device string: foo");
  ASSERT_STATUS(disp_device_parse("foo:2", &d), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "device type at start of device string: foo");
  ASSERT_STATUS(disp_device_parse("", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Device string must not be empty");
  const char *invalid[] = {"cuda:", "cuda:x", "cuda:01", "cuda:1:2", ":1", "cuda 1", "cuda:-1"};
  for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
    ASSERT_STATUS(disp_device_parse(invalid[i], &d), DISP_ERR_INVALID_ARG);
    char want[64];
    snprintf(want, sizeof want, "Invalid device string: '%s'", invalid[i]);
    ASSERT_EQ_STR(disp_last_error(), want);
  }
  ASSERT_STATUS(disp_device_parse("cuda:99999", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Could not parse device index '99999' in device string 'cuda:99999'");
  ASSERT_STATUS(disp_device_parse("cpu:1", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "CPU device index must be -1 or zero, got 1");
  ASSERT_TRUE(disp_device_equal(d, cpu)); /* untouched on every error */
  ASSERT_STATUS(disp_device_validate(disp_device_make(DISP_BACKEND_CUDA, -2)), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Device index must be -1 or non-negative, got -2");
  return 0;
}

/* Issue 8: the device strings a user may mistype, each refused as c10::Device
 * does (its string grammar, then validate()), *out untouched. */
TEST(device_parse_refuses_bad_indices) {
  disp_device d = meta;
  ASSERT_STATUS(disp_device_parse("cpu:5", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "CPU device index must be -1 or zero, got 5");
  /* a minus sign is outside the grammar: no string reaches a negative index */
  ASSERT_STATUS(disp_device_parse("cuda:-2", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Invalid device string: 'cuda:-2'");
  ASSERT_STATUS(disp_device_parse("x", &d), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), " device type at start of device string: x");
  ASSERT_STATUS(disp_device_parse("cpu:", &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Invalid device string: 'cpu:'");
  ASSERT_TRUE(disp_device_equal(d, meta));
  /* the same checks for a device made by hand, where every constructor meets it */
  disp_tensor *t = NULL;
  int64_t one = 1;
  ASSERT_STATUS(disp_tensor_empty(&one, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, 5), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "CPU device index must be -1 or zero, got 5");
  ASSERT_STATUS(disp_tensor_empty(&one, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -2), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Device index must be -1 or non-negative, got -2");
  ASSERT_TRUE(t == NULL);
  /* Note [NULL arguments] */
  ASSERT_STATUS(disp_device_parse(NULL, &d), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_parse: str is NULL");
  ASSERT_STATUS(disp_device_parse("cpu", NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_parse: out is NULL");
  ASSERT_STATUS(disp_device_rename_privateuse1(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_rename_privateuse1: name is NULL");
  ASSERT_EQ_INT(disp_device_format(disp_device_make(DISP_BACKEND_CUDA, 1), NULL, 64), 6); /* measured */
  disp_dtype dt = DISP_DTYPE_INT8;
  ASSERT_STATUS(disp_dtype_parse("float32", NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_dtype_parse: out is NULL");
  ASSERT_STATUS(disp_dtype_parse(NULL, &dt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_dtype_parse: name is NULL");
  ASSERT_EQ_INT(dt, DISP_DTYPE_INT8);
  return 0;
}

/* ---- key sets ---------------------------------------------------------- */

TEST(default_keysets_match_pytorch) {
  disp_layout S = DISP_LAYOUT_STRIDED;
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(cpu, DISP_DTYPE_FLOAT32, S, 0)),
                "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(meta, DISP_DTYPE_FLOAT32, S, 0)),
                "DispatchKeySet(Meta, ADInplaceOrView, AutogradMeta)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(pu1, DISP_DTYPE_FLOAT32, S, 0)),
                "DispatchKeySet(PrivateUse1, ADInplaceOrView, AutogradPrivateUse1, AutocastPrivateUse1)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(cpu, DISP_DTYPE_FLOAT32, S, 1)),
                "DispatchKeySet(CPU, AutocastCPU)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(cpu, DISP_DTYPE_QUINT8, S, 0)),
                "DispatchKeySet(QuantizedCPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(cpu, DISP_DTYPE_FLOAT32, DISP_LAYOUT_SPARSE_COO, 0)),
                "DispatchKeySet(SparseCPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(disp_device_make(DISP_BACKEND_CUDA, 0),
                                                    DISP_DTYPE_INT64, S, 0)),
                "DispatchKeySet(CUDA, ADInplaceOrView, AutogradCUDA, AutocastCUDA)");
  ASSERT_EQ_STR(fmt_keys(disp_tensor_default_keyset(disp_device_make(DISP_BACKEND_XLA, 0),
                                                    DISP_DTYPE_FLOAT32, S, 1)),
                "DispatchKeySet(XLA)");
  ASSERT_TRUE(disp_keyset_is_empty(
      disp_tensor_default_keyset(disp_device_make(DISP_NUM_BACKENDS, 0), DISP_DTYPE_FLOAT32, S, 0)));
  return 0;
}

static void noop_release(void *h) { (void)h; }

TEST(created_tensors_carry_default_keysets) {
  int64_t sizes[] = {2, 3};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &t));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)),
                "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  disp_tensor_release(t);

  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, meta, &t));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)), "DispatchKeySet(Meta, ADInplaceOrView, AutogradMeta)");
  disp_tensor_release(t);

  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_QUINT8, cpu, &t));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)),
                "DispatchKeySet(QuantizedCPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  disp_tensor_release(t);

  disp_tls_state saved = disp_tls_inference_mode_push(1);
  disp_status s = disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &t);
  disp_tls_restore(saved);
  ASSERT_OK(s);
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)), "DispatchKeySet(CPU, AutocastCPU)");
  ASSERT_TRUE(disp_tensor_is_inference(t));
  disp_tensor_release(t);

  int handle = 0;
  ASSERT_OK(disp_tensor_new_opaque(sizes, 2, DISP_DTYPE_FLOAT32, DISP_LAYOUT_SPARSE_COO, cpu, &handle,
                                   noop_release, &t));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)),
                "DispatchKeySet(SparseCPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  ASSERT_EQ_INT(disp_tensor_layout(t), DISP_LAYOUT_SPARSE_COO);
  disp_tensor_release(t);

  /* PrivateUse1 needs an allocator; the next cases test that path. */
  counting c = {0, 0, 0, 0};
  disp_allocator a = {count_allocate, count_deallocate, &c, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &a));
  s = disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, pu1, &t);
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, NULL));
  ASSERT_OK(s);
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)),
                "DispatchKeySet(PrivateUse1, ADInplaceOrView, AutogradPrivateUse1, AutocastPrivateUse1)");
  disp_tensor_release(t);
  ASSERT_EQ_INT(c.allocs, 1);
  ASSERT_EQ_INT(c.frees, 1);

  /* A backend that needs special keys replaces them. */
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &t));
  disp_tensor_set_keyset(t, disp_keyset_of(DISP_KEY_SPARSE_CPU));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)), "DispatchKeySet(SparseCPU)");
  disp_tensor_release(t);
  return 0;
}

/* ---- allocators -------------------------------------------------------- */

TEST(privateuse1_allocator_required_and_used) {
  int64_t sizes[] = {4, 5};
  disp_tensor *t = NULL;
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_PRIVATEUSE1) == NULL);
  ASSERT_STATUS(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, pu1, &t), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(t == NULL);
  char want[128];
  snprintf(want, sizeof want, "no allocator registered for device type PrivateUse1 (%s)",
           disp_device_type_name(DISP_BACKEND_PRIVATEUSE1));
  ASSERT_EQ_STR(disp_last_error(), want);

  counting c = {0, 0, 0, 0};
  disp_allocator a = {count_allocate, count_deallocate, &c, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &a));
  const disp_allocator *got = disp_allocator_get(DISP_BACKEND_PRIVATEUSE1);
  ASSERT_TRUE(got && got != &a && got->ctx == &c); /* a copy */

  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, pu1, &t));
  ASSERT_EQ_INT(c.allocs, 1);
  ASSERT_EQ_INT(c.live_bytes, 80);
  ASSERT_TRUE(disp_tensor_data_ptr(t) != NULL);
  ASSERT_TRUE(disp_device_equal(disp_tensor_device(t), pu1));

  /* Re-registering replaces it for new storages, but t still frees
   * through the allocator that made it. */
  counting c2 = {0, 0, 0, 0};
  disp_allocator a2 = {count_allocate, count_deallocate, &c2, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &a2));
  ASSERT_EQ_INT(got->ctx == &c, 1); /* the old copy stays valid */
  disp_tensor *t2;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, pu1, &t2));
  ASSERT_EQ_INT(c2.allocs, 1);
  disp_tensor_release(t);
  ASSERT_EQ_INT(c.frees, 1);
  ASSERT_EQ_INT(c.live_bytes, 0);
  ASSERT_EQ_INT(c2.frees, 0);
  disp_tensor_release(t2);
  ASSERT_EQ_INT(c2.frees, 1);

  /* An allocator that fails gives NO_MEMORY and leaks nothing. */
  c2.fail = 1;
  t = NULL;
  ASSERT_STATUS(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, pu1, &t), DISP_ERR_NO_MEMORY);
  ASSERT_TRUE(t == NULL);
  ASSERT_CONTAINS(disp_last_error(), "you tried to allocate 80 bytes");
  /* ...but a zero-byte request may return NULL. */
  int64_t zero[] = {0};
  ASSERT_OK(disp_tensor_empty(zero, 1, DISP_DTYPE_FLOAT32, pu1, &t));
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  disp_tensor_release(t);

  ASSERT_STATUS(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &(disp_allocator){NULL, count_deallocate, NULL, NULL}),
                DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_allocator_register(DISP_NUM_BACKENDS, &a), DISP_ERR_INVALID_ARG);

  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, NULL));
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_PRIVATEUSE1) == NULL);
  ASSERT_STATUS(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, pu1, &t), DISP_ERR_INVALID_ARG);
  /* CUDA has no built-in allocator either. */
  ASSERT_STATUS(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CUDA, 0), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "no allocator registered for device type CUDA (cuda)");
  return 0;
}

TEST(cpu_allocator_aligned_and_restorable) {
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_CPU) != NULL);
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_META) != NULL);
  int64_t sizes[] = {3};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_INT8, cpu, &t));
  ASSERT_EQ_INT((uintptr_t)disp_tensor_data_ptr(t) % 64, 0);
  memset(disp_tensor_data_ptr(t), 7, 3);
  disp_tensor_release(t);

  /* Replace CPU's allocator, then restore the built-in one with NULL. */
  counting c = {0, 0, 0, 0};
  disp_allocator a = {count_allocate, count_deallocate, &c, NULL};
  const disp_allocator *builtin = disp_allocator_get(DISP_BACKEND_CPU);
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_CPU, &a));
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_INT8, cpu, &t));
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_CPU, NULL));
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_CPU) == builtin);
  disp_tensor_release(t);
  ASSERT_EQ_INT(c.allocs, 1);
  ASSERT_EQ_INT(c.frees, 1);
  return 0;
}

/* ---- shapes ------------------------------------------------------------ */

static int check_ints(const int64_t *got, const int64_t *want, int n) {
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) return 0;
  return 1;
}

TEST(empty_contiguous_strides) {
  int64_t sizes[] = {2, 3, 4};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 3, DISP_DTYPE_FLOAT32, cpu, &t));
  int64_t want[] = {12, 4, 1};
  ASSERT_EQ_INT(disp_tensor_ndim(t), 3);
  ASSERT_TRUE(check_ints(disp_tensor_sizes(t), sizes, 3));
  ASSERT_TRUE(check_ints(disp_tensor_strides(t), want, 3));
  ASSERT_EQ_INT(disp_tensor_numel(t), 24);
  ASSERT_TRUE(disp_tensor_is_contiguous(t));
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 96);
  ASSERT_EQ_INT(disp_tensor_storage_offset(t), 0);
  ASSERT_EQ_INT(disp_tensor_dtype(t), DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(disp_tensor_itemsize(t), 4);
  ASSERT_TRUE(disp_tensor_data_ptr(t) == disp_storage_data(disp_tensor_storage(t)));
  int64_t v;
  ASSERT_OK(disp_tensor_size(t, -1, &v));
  ASSERT_EQ_INT(v, 4);
  ASSERT_OK(disp_tensor_stride(t, -3, &v));
  ASSERT_EQ_INT(v, 12);
  ASSERT_STATUS(disp_tensor_size(t, 3, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  ASSERT_STATUS(disp_tensor_stride(t, -4, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  disp_tensor_release(t);

  /* A size-0 dimension counts as 1 in the strides: empty(2, 0, 3). */
  int64_t zsizes[] = {2, 0, 3}, zwant[] = {3, 3, 1};
  ASSERT_OK(disp_tensor_empty(zsizes, 3, DISP_DTYPE_FLOAT64, cpu, &t));
  ASSERT_TRUE(check_ints(disp_tensor_strides(t), zwant, 3));
  ASSERT_EQ_INT(disp_tensor_numel(t), 0);
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 0);
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  ASSERT_TRUE(disp_tensor_is_contiguous(t));
  disp_tensor_release(t);
  return 0;
}

TEST(empty_strided_storage_size) {
  int64_t sizes[] = {2, 3}, strides[] = {1, 2};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty_strided(sizes, strides, 2, DISP_DTYPE_FLOAT32, cpu, &t));
  ASSERT_TRUE(check_ints(disp_tensor_strides(t), strides, 2));
  /* 1 + (2-1)*1 + (3-1)*2 = 6 elements. */
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 24);
  ASSERT_TRUE(!disp_tensor_is_contiguous(t));
  disp_tensor_release(t);

  /* Broadcast-like stride 0, and size-1 dims with odd strides stay contiguous. */
  int64_t s2[] = {4, 1, 3}, st2[] = {3, 100, 1};
  ASSERT_OK(disp_tensor_empty_strided(s2, st2, 3, DISP_DTYPE_INT32, cpu, &t));
  ASSERT_TRUE(disp_tensor_is_contiguous(t));
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 48);
  disp_tensor_release(t);
  int64_t st3[] = {0, 0, 1};
  ASSERT_OK(disp_tensor_empty_strided(s2, st3, 3, DISP_DTYPE_INT32, cpu, &t));
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 12);
  ASSERT_TRUE(!disp_tensor_is_contiguous(t));
  disp_tensor_release(t);

  int64_t neg[] = {1, -2};
  ASSERT_STATUS(disp_tensor_empty_strided(sizes, neg, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "empty_strided: negative strides are not supported, got strides: [1, -2]");
  ASSERT_STATUS(disp_tensor_empty_strided(sizes, NULL, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  return 0;
}

TEST(zero_dim_and_zero_size) {
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(NULL, 0, DISP_DTYPE_FLOAT64, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_ndim(t), 0);
  ASSERT_EQ_INT(disp_tensor_numel(t), 1);
  ASSERT_TRUE(disp_tensor_sizes(t) != NULL);
  ASSERT_TRUE(disp_tensor_is_contiguous(t));
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 8);
  ASSERT_TRUE(disp_tensor_data_ptr(t) != NULL);
  *(double *)disp_tensor_data_ptr(t) = 1.5;
  int64_t v;
  ASSERT_STATUS(disp_tensor_size(t, 0, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "dimension specified as 0 but tensor has no dimensions");
  disp_tensor_release(t);

  int64_t sizes[] = {0};
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_numel(t), 0);
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 0);
  disp_tensor_release(t);
  return 0;
}

TEST(many_dims_spill_to_heap) {
  int64_t sizes[DISP_TENSOR_MAX_DIMS + 1];
  for (int i = 0; i <= DISP_TENSOR_MAX_DIMS; i++) sizes[i] = 1;
  sizes[0] = 2;
  sizes[9] = 3;
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 10, DISP_DTYPE_INT16, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_numel(t), 6);
  int64_t st;
  ASSERT_OK(disp_tensor_stride(t, 0, &st));
  ASSERT_EQ_INT(st, 3);
  ASSERT_OK(disp_tensor_size(t, -1, &st));
  ASSERT_EQ_INT(st, 3);
  /* Shrink back inline and grow again through the internal setter. */
  int64_t small[] = {6};
  ASSERT_OK(disp__tensor_set_sizes_strides(t, small, NULL, 1));
  ASSERT_EQ_INT(disp_tensor_ndim(t), 1);
  ASSERT_OK(disp__tensor_set_sizes_strides(t, sizes, NULL, 10));
  ASSERT_EQ_INT(disp_tensor_ndim(t), 10);
  disp_tensor_release(t);

  ASSERT_OK(disp_tensor_empty(sizes, DISP_TENSOR_MAX_DIMS, DISP_DTYPE_INT16, meta, &t));
  ASSERT_EQ_INT(disp_tensor_ndim(t), DISP_TENSOR_MAX_DIMS);
  disp_tensor_release(t);
  ASSERT_STATUS(disp_tensor_empty(sizes, DISP_TENSOR_MAX_DIMS + 1, DISP_DTYPE_INT16, cpu, &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "empty: the number of dimensions must be between 0 and 64, got 65");
  ASSERT_STATUS(disp_tensor_empty(sizes, -1, DISP_DTYPE_INT16, cpu, &t), DISP_ERR_INVALID_ARG);
  return 0;
}

TEST(bad_sizes_dtype_device) {
  disp_tensor *t = NULL;
  int64_t neg[] = {2, -1};
  ASSERT_STATUS(disp_tensor_empty(neg, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Trying to create tensor with negative dimension -1: [2, -1]");
  ASSERT_STATUS(disp_tensor_empty(NULL, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_empty: sizes is NULL");

  /* numel overflows int64. */
  int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
  ASSERT_STATUS(disp_tensor_empty(huge, 2, DISP_DTYPE_FLOAT32, meta, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]");
  /* numel fits but numel * itemsize does not. */
  int64_t big[] = {INT64_C(1) << 61};
  ASSERT_STATUS(disp_tensor_empty(big, 1, DISP_DTYPE_FLOAT64, meta, &t), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "Storage size calculation overflowed with sizes=[2305843009213693952]");
  /* Strided: the offset sum overflows. */
  int64_t ss[] = {3}, sst[] = {INT64_MAX};
  ASSERT_STATUS(disp_tensor_empty_strided(ss, sst, 1, DISP_DTYPE_INT8, meta, &t), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "and strides=[9223372036854775807]");
  /* A zero size makes the rest harmless... unless the product itself overflows. */
  int64_t zh[] = {0, INT64_C(1) << 62};
  ASSERT_OK(disp_tensor_empty(zh, 2, DISP_DTYPE_FLOAT32, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_numel(t), 0);
  disp_tensor_release(t);
  t = NULL;

  int64_t ok[] = {2};
  ASSERT_STATUS(disp_tensor_empty(ok, 1, DISP_DTYPE_COUNT, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "empty: invalid dtype 11");
  ASSERT_STATUS(disp_tensor_empty(ok, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, 2), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "CPU device index must be -1 or zero, got 2");
  ASSERT_STATUS(disp_tensor_empty(ok, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_NUM_BACKENDS, 0), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(t == NULL);
  return 0;
}

TEST(meta_tensors_have_no_memory) {
  int64_t sizes[] = {1000, 1000};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, meta, &t));
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  ASSERT_TRUE(disp_storage_data(disp_tensor_storage(t)) == NULL);
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 4000000);
  ASSERT_EQ_STR(fmt_dev(disp_tensor_device(t)), "meta");
  disp_tensor *v;
  int64_t vs[] = {1000};
  ASSERT_OK(disp_tensor_new_view(t, vs, NULL, 1, 999000, &v));
  ASSERT_TRUE(disp_tensor_data_ptr(v) == NULL);
  disp_tensor_release(v);
  disp_tensor_release(t);
  return 0;
}

/* ---- refcounts and views ----------------------------------------------- */

TEST(refcounts_balance) {
  int64_t sizes[] = {4};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_INT32, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1);
  ASSERT_TRUE(disp_tensor_retain(t) == t);
  ASSERT_EQ_INT(disp_tensor_refcount(t), 2);
  disp_tensor_release(t);
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1);
  disp_storage *st = disp_tensor_storage(t);
  ASSERT_EQ_INT(disp_storage_refcount(st), 1);
  ASSERT_TRUE(disp_storage_retain(st) == st);
  ASSERT_EQ_INT(disp_storage_refcount(st), 2);
  disp_storage_release(st);
  disp_tensor_release(t);
  disp_tensor_release(NULL);
  disp_storage_release(NULL);
  return 0;
}

TEST(views_share_storage_and_outlive_base) {
  int64_t sizes[] = {2, 3};
  disp_tensor *base;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_INT32, cpu, &base));
  int32_t *d = disp_tensor_data_ptr(base);
  for (int i = 0; i < 6; i++) d[i] = i * 10;

  /* The transposed view: sizes (3, 2), strides (1, 3). */
  int64_t vs[] = {3, 2}, vst[] = {1, 3};
  disp_tensor *view;
  ASSERT_OK(disp_tensor_new_view(base, vs, vst, 2, 0, &view));
  ASSERT_TRUE(disp_tensor_storage(view) == disp_tensor_storage(base));
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(base)), 2);
  ASSERT_TRUE(!disp_tensor_is_contiguous(view));
  ASSERT_TRUE(disp_keyset_equal(disp_tensor_keyset(view), disp_tensor_keyset(base)));

  /* Row 1 of base, as a 1-d view at offset 3. */
  int64_t rs[] = {3};
  disp_tensor *row;
  ASSERT_OK(disp_tensor_new_view(base, rs, NULL, 1, 3, &row));
  ASSERT_EQ_INT(disp_tensor_storage_offset(row), 3);
  ASSERT_TRUE((int32_t *)disp_tensor_data_ptr(row) == d + 3);
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(base)), 3);

  disp_tensor_release(base);
  /* The memory is still there (ASan would catch a use after free). */
  ASSERT_EQ_INT(((int32_t *)disp_tensor_data_ptr(row))[2], 50);
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(row)), 2);
  /* A view of a view. */
  disp_tensor *vv;
  int64_t one[] = {1};
  ASSERT_OK(disp_tensor_new_view(view, one, NULL, 1, 5, &vv));
  ASSERT_EQ_INT(*(int32_t *)disp_tensor_data_ptr(vv), 50);
  disp_tensor_release(view);
  disp_tensor_release(row);
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(vv)), 1);
  disp_tensor_release(vv);
  return 0;
}

TEST(view_bounds_checked) {
  int64_t sizes[] = {2, 3};
  disp_tensor *base, *v = NULL;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &base));
  int64_t vs[] = {7};
  ASSERT_STATUS(disp_tensor_new_view(base, vs, NULL, 1, 0, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "setStorage: sizes [7], strides [1], storage offset 0, and itemsize 4 requiring a "
                "storage size of 28 are out of bounds for storage of size 24");
  int64_t ok[] = {2};
  ASSERT_STATUS(disp_tensor_new_view(base, ok, NULL, 1, 5, &v), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_new_view(base, ok, NULL, 1, -1, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Tensor: invalid storage offset -1");
  /* A view with no elements may point anywhere. */
  int64_t none[] = {0};
  ASSERT_OK(disp_tensor_new_view(base, none, NULL, 1, 100, &v));
  disp_tensor_release(v);
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(base)), 1);
  disp_tensor_release(base);
  return 0;
}

TEST(version_counter_shared_by_views) {
  int64_t sizes[] = {4};
  disp_tensor *a, *b, *other;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &a));
  ASSERT_OK(disp_tensor_new_view(a, sizes, NULL, 1, 0, &b));
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &other));
  ASSERT_EQ_INT(disp_tensor_version(a), 0);
  ASSERT_OK(disp_tensor_bump_version(a));
  ASSERT_EQ_INT(disp_tensor_version(b), 1);
  ASSERT_OK(disp_tensor_bump_version(b));
  ASSERT_OK(disp_tensor_bump_version(b));
  ASSERT_EQ_INT(disp_tensor_version(a), 3);
  ASSERT_EQ_INT(disp_tensor_version(other), 0);
  disp_tensor_release(a);
  ASSERT_OK(disp_tensor_bump_version(b)); /* the counter outlives a */
  ASSERT_EQ_INT(disp_tensor_version(b), 4);

  /* A tensor on the same storage made with new_with_storage is not a view. */
  disp_tensor *c;
  ASSERT_OK(disp_tensor_new_with_storage(disp_tensor_storage(b), 0, sizes, NULL, 1, DISP_DTYPE_FLOAT32,
                                         disp_keyset_empty(), &c));
  ASSERT_EQ_INT(disp_tensor_version(c), 0);
  disp_tensor_release(b);
  disp_tensor_release(c);
  disp_tensor_release(other);
  return 0;
}

TEST(inference_tensors) {
  int64_t sizes[] = {2};
  disp_tensor *t, *v, *normal;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &normal));
  disp_tls_state saved = disp_tls_inference_mode_push(1);
  disp_status s = disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &t);
  disp_status s2 = s == DISP_OK ? disp_tensor_bump_version(t) : s;
  /* A view of a normal tensor made in inference mode stays normal. */
  disp_status s3 = disp_tensor_new_view(normal, sizes, NULL, 1, 0, &v);
  disp_tls_restore(saved);
  ASSERT_OK(s);
  ASSERT_OK(s2); /* no-op inside inference mode */
  ASSERT_OK(s3);
  ASSERT_TRUE(!disp_tensor_is_inference(v));
  ASSERT_OK(disp_tensor_bump_version(v));
  ASSERT_EQ_INT(disp_tensor_version(normal), 1);
  disp_tensor_release(v);

  ASSERT_TRUE(disp_tensor_is_inference(t));
  ASSERT_TRUE(!disp_tensor_is_inference(normal));
  ASSERT_EQ_INT(disp_tensor_version(t), 0);
  ASSERT_STATUS(disp_tensor_bump_version(t), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "Inplace update to inference tensor outside InferenceMode is not allowed.");
  ASSERT_STATUS(disp_tensor_set_requires_grad(t, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  /* A view of an inference tensor is one too, with the same keys. */
  ASSERT_OK(disp_tensor_new_view(t, sizes, NULL, 1, 0, &v));
  ASSERT_TRUE(disp_tensor_is_inference(v));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(v)), "DispatchKeySet(CPU, AutocastCPU)");
  disp_tensor_release(v);
  disp_tensor_release(t);
  disp_tensor_release(normal);
  return 0;
}

TEST(requires_grad) {
  int64_t sizes[] = {2};
  disp_tensor *f, *i;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT16, cpu, &f));
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_INT64, cpu, &i));
  ASSERT_TRUE(!disp_tensor_requires_grad(f));
  ASSERT_OK(disp_tensor_set_requires_grad(f, 1));
  ASSERT_TRUE(disp_tensor_requires_grad(f));
  ASSERT_STATUS(disp_tensor_set_requires_grad(i, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "only Tensors of floating point dtype can require gradients");
  ASSERT_TRUE(!disp_tensor_requires_grad(i));
  ASSERT_OK(disp_tensor_set_requires_grad(i, 0));
  ASSERT_OK(disp_tensor_set_requires_grad(f, 0));
  ASSERT_TRUE(!disp_tensor_requires_grad(f));
  disp_tensor_release(f);
  disp_tensor_release(i);
  return 0;
}

static int meta_destroyed;
static void destroy_meta(void *m) {
  meta_destroyed++;
  free(m);
}

TEST(autograd_slot_destroyed_with_tensor) {
  int64_t sizes[] = {2};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &t));
  meta_destroyed = 0;
  void *m1 = malloc(16), *m2 = malloc(16);
  disp__tensor_set_autograd_meta(t, m1, destroy_meta);
  ASSERT_TRUE(disp__tensor_autograd_meta(t) == m1);
  disp__tensor_set_autograd_meta(t, m2, destroy_meta);
  ASSERT_EQ_INT(meta_destroyed, 1);
  disp_tensor_release(t);
  ASSERT_EQ_INT(meta_destroyed, 2);
  return 0;
}

/* ---- opaque tensors and wrapped storage -------------------------------- */

static int opaque_released;
static void *opaque_last;
static void release_opaque(void *h) {
  opaque_released++;
  opaque_last = h;
}

TEST(opaque_tensor_release_called_once) {
  int64_t sizes[] = {3, 4};
  int handle = 42;
  disp_tensor *t;
  opaque_released = 0;
  ASSERT_OK(disp_tensor_new_opaque(sizes, 2, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED,
                                   disp_device_make(DISP_BACKEND_XLA, 0), &handle, release_opaque, &t));
  ASSERT_TRUE(disp_tensor_opaque_handle(t) == &handle);
  ASSERT_TRUE(disp_tensor_storage(t) == NULL);
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  ASSERT_TRUE(disp_tensor_strides(t) == NULL);
  ASSERT_TRUE(!disp_tensor_is_contiguous(t));
  ASSERT_EQ_INT(disp_tensor_numel(t), 12);
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)), "DispatchKeySet(XLA, ADInplaceOrView, AutogradXLA)");
  int64_t v;
  ASSERT_OK(disp_tensor_size(t, 1, &v));
  ASSERT_EQ_INT(v, 4);
  ASSERT_STATUS(disp_tensor_stride(t, 0, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "opaque tensors do not have strides");
  disp_tensor *view;
  ASSERT_STATUS(disp_tensor_new_view(t, sizes, NULL, 2, 0, &view), DISP_ERR_INVALID_ARG);

  disp_tensor_retain(t);
  disp_tensor_release(t);
  ASSERT_EQ_INT(opaque_released, 0);
  disp_tensor_release(t);
  ASSERT_EQ_INT(opaque_released, 1);
  ASSERT_TRUE(opaque_last == &handle);

  /* A failed constructor does not take the handle. */
  int64_t bad[] = {-3};
  ASSERT_STATUS(disp_tensor_new_opaque(bad, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED, cpu, &handle,
                                       release_opaque, &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_new_opaque(sizes, 2, DISP_DTYPE_FLOAT32, DISP_LAYOUT_COUNT, cpu, &handle,
                                       release_opaque, &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(opaque_released, 1);
  return 0;
}

static int blob_released;
static void release_blob(void *data, void *ctx) {
  blob_released++;
  *(int *)ctx += 1;
  (void)data;
}

TEST(storage_wrapping_caller_memory) {
  static float buf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int ctx_count = 0;
  blob_released = 0;
  disp_storage *st;
  ASSERT_OK(disp_storage_new_with_data(buf, sizeof buf, cpu, release_blob, &ctx_count, &st));
  ASSERT_TRUE(disp_storage_data(st) == buf);
  ASSERT_EQ_INT(disp_storage_nbytes(st), 32);
  ASSERT_TRUE(!disp_storage_resizable(st));
  ASSERT_STATUS(disp__storage_resize(st, 64), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Trying to resize storage that is not resizable");

  int64_t sizes[] = {2, 2}, strides[] = {1, 2};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_new_with_storage(st, 2, sizes, strides, 2, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &t));
  ASSERT_EQ_INT(disp_storage_refcount(st), 2);
  ASSERT_EQ_INT(*(float *)disp_tensor_data_ptr(t), 2);
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(t)), "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  disp_tensor *k;
  ASSERT_OK(disp_tensor_new_with_storage(st, 0, sizes, NULL, 2, DISP_DTYPE_FLOAT32,
                                         disp_keyset_of(DISP_KEY_QUANTIZED_CPU), &k));
  ASSERT_EQ_STR(fmt_keys(disp_tensor_keyset(k)), "DispatchKeySet(QuantizedCPU)");
  disp_tensor_release(k);
  disp_tensor *bad = NULL;
  ASSERT_STATUS(disp_tensor_new_with_storage(st, 6, sizes, NULL, 2, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &bad),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "requiring a storage size of 40 are out of bounds for storage of size 32");
  ASSERT_STATUS(disp_tensor_new_with_storage(NULL, 0, sizes, NULL, 2, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &bad),
                DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(bad == NULL);

  disp_storage_release(st);
  ASSERT_EQ_INT(blob_released, 0);
  disp_tensor_release(t);
  ASSERT_EQ_INT(blob_released, 1);
  ASSERT_EQ_INT(ctx_count, 1);
  return 0;
}

/* Issue 8 case 3: a length without memory is refused, where a kernel would
 * read it; nothing is taken (release is not called). */
TEST(storage_refuses_length_without_data) {
  int ctx_count = 0;
  blob_released = 0;
  disp_storage *st = (disp_storage *)&ctx_count; /* must stay untouched */
  ASSERT_STATUS(disp_storage_new_with_data(NULL, 64, cpu, release_blob, &ctx_count, &st), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_new_with_data: data is NULL");
  ASSERT_TRUE(st == (disp_storage *)&ctx_count);
  ASSERT_STATUS(disp_storage_new_with_data(NULL, 1, pu1, NULL, NULL, &st), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_new_with_data: data is NULL");
  static char buf[4];
  ASSERT_STATUS(disp_storage_new_with_data(buf, 4, cpu, release_blob, &ctx_count, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_new_with_data: out is NULL");
  /* a length no memory can have: sizes are int64 everywhere else */
  ASSERT_STATUS(disp_storage_new_with_data(buf, SIZE_MAX, cpu, release_blob, &ctx_count, &st), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_new_with_data: nbytes 18446744073709551615 is larger than the "
                                   "largest storage (9223372036854775807 bytes)");
  ASSERT_STATUS(disp_storage_new((size_t)INT64_MAX + 1, meta, &st), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_new: nbytes 9223372036854775808 is larger than the "
                                   "largest storage (9223372036854775807 bytes)");
  ASSERT_TRUE(st == (disp_storage *)&ctx_count);
  ASSERT_EQ_INT(blob_released, 0);

  /* No bytes, no memory needed; a tensor with no elements fits on it. */
  ASSERT_OK(disp_storage_new_with_data(NULL, 0, cpu, release_blob, &ctx_count, &st));
  ASSERT_TRUE(disp_storage_data(st) == NULL);
  int64_t empty_sizes[] = {0, 3};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_new_with_storage(st, 0, empty_sizes, NULL, 2, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &t));
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  disp_tensor_release(t);
  disp_storage_release(st);
  ASSERT_EQ_INT(blob_released, 1);
  /* Meta storages hold no memory by design: only the length matters. */
  ASSERT_OK(disp_storage_new_with_data(NULL, 64, meta, NULL, NULL, &st));
  ASSERT_EQ_INT(disp_storage_nbytes(st), 64);
  disp_storage_release(st);
  return 0;
}

/* Issue 8 case 3's class: every constructor taking an array with its count
 * refuses NULL with a count, and takes NULL with none. */
TEST(constructors_refuse_array_without_count) {
  int64_t sizes[] = {2, 2}, strides[] = {2, 1};
  disp_tensor *t = NULL, *base;
  ASSERT_STATUS(disp_tensor_empty_strided(sizes, NULL, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_empty_strided: strides is NULL");
  ASSERT_STATUS(disp_tensor_empty_strided(NULL, strides, 2, DISP_DTYPE_FLOAT32, cpu, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_empty_strided: sizes is NULL");
  ASSERT_STATUS(disp_tensor_new_opaque(NULL, 2, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED, cpu, NULL, NULL, &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_new_opaque: sizes is NULL");
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &base));
  ASSERT_STATUS(disp_tensor_new_view(base, NULL, NULL, 1, 0, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_new_view: sizes is NULL");
  ASSERT_STATUS(disp_tensor_new_with_storage(disp_tensor_storage(base), 0, NULL, NULL, 1, DISP_DTYPE_FLOAT32,
                                             disp_keyset_empty(), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_new_with_storage: sizes is NULL");
  ASSERT_STATUS(disp_tensor_new_with_storage(NULL, 0, sizes, NULL, 2, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &t),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_new_with_storage: st is NULL");
  ASSERT_TRUE(t == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(base), 1);

  disp_dtype dt = DISP_DTYPE_INT8;
  disp_scalar two = disp_scalar_int(2);
  ASSERT_STATUS(disp_result_type(NULL, 1, &two, 1, &dt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_result_type: tensors is NULL");
  ASSERT_STATUS(disp_result_type(&base, 1, NULL, 1, &dt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_result_type: scalars is NULL");
  ASSERT_STATUS(disp_promote_types(DISP_DTYPE_INT8, DISP_DTYPE_UINT8, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_promote_types: out is NULL");
  ASSERT_EQ_INT(dt, DISP_DTYPE_INT8);

  /* a count of 0 takes NULL */
  ASSERT_OK(disp_result_type(NULL, 0, &two, 1, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_INT64);
  ASSERT_OK(disp_result_type(&base, 1, NULL, 0, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT32);
  ASSERT_OK(disp_tensor_empty_strided(NULL, NULL, 0, DISP_DTYPE_FLOAT32, cpu, &t));
  ASSERT_EQ_INT(disp_tensor_numel(t), 1);
  disp_tensor_release(t);
  ASSERT_OK(disp_tensor_new_view(base, NULL, NULL, 0, 3, &t));
  ASSERT_EQ_INT(disp_tensor_storage_offset(t), 3);
  disp_tensor_release(t);
  disp_tensor_release(base);
  return 0;
}

/* Note [Tensor core NULL arguments]: a NULL object reads as none, never
 * as a plausible float32 cpu tensor; pointer getters also say why. */
TEST(null_getters_answer_none) {
  ASSERT_EQ_INT(disp_tensor_dtype(NULL), DISP_DTYPE_COUNT);
  ASSERT_EQ_INT(disp_tensor_layout(NULL), DISP_LAYOUT_COUNT);
  ASSERT_EQ_STR(fmt_dev(disp_tensor_device(NULL)), "unknown");
  ASSERT_STATUS(disp_device_validate(disp_tensor_device(NULL)), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(disp_keyset_is_empty(disp_tensor_keyset(NULL)));
  ASSERT_EQ_INT(disp_tensor_ndim(NULL) + disp_tensor_numel(NULL) + disp_tensor_storage_offset(NULL), 0);
  ASSERT_EQ_INT(disp_tensor_itemsize(NULL) + disp_tensor_refcount(NULL) + disp_tensor_version(NULL), 0);
  ASSERT_FALSE(disp_tensor_is_contiguous(NULL) || disp_tensor_is_inference(NULL) || disp_tensor_requires_grad(NULL));
  disp_clear_error();
  ASSERT_TRUE(disp_tensor_sizes(NULL) == NULL);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_sizes: t is NULL");
  ASSERT_TRUE(disp_tensor_data_ptr(NULL) == NULL);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_data_ptr: t is NULL");
  ASSERT_TRUE(disp_tensor_retain(NULL) == NULL);
  disp_tensor_set_keyset(NULL, disp_keyset_of(DISP_KEY_CPU));
  int64_t v = 7;
  ASSERT_STATUS(disp_tensor_size(NULL, 0, &v), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_size: t is NULL");
  ASSERT_EQ_INT(v, 7);
  ASSERT_STATUS(disp_tensor_set_requires_grad(NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_set_requires_grad: t is NULL");

  ASSERT_TRUE(disp_storage_data(NULL) == NULL);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_data: st is NULL");
  ASSERT_EQ_INT(disp_storage_nbytes(NULL) + disp_storage_refcount(NULL), 0);
  ASSERT_FALSE(disp_storage_resizable(NULL));
  ASSERT_EQ_STR(fmt_dev(disp_storage_device(NULL)), "unknown");
  ASSERT_TRUE(disp_storage_retain(NULL) == NULL);
  return 0;
}

/* disp_call's trailing out-pointers are C varargs; a NULL one is refused
 * naming the function called and the return it is for. */
TEST(call_refuses_null_out_pointer) {
  const disp_op *add;
  ASSERT_OK(disp_op_find("aten::add.Tensor", &add));
  int64_t n = 2;
  disp_tensor *a;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, cpu, &a));
  ASSERT_STATUS(disp_call(add, a, a, disp_scalar_int(1), (disp_tensor **)NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: out is NULL (the out-pointer for return 0 of aten::add.Tensor)");
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  return 0;
}

static disp_status accept_all(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)op, (void)ks, (void)ud;
  disp_stack_drop(stack, disp_stack_size(stack));
  return DISP_OK;
}

/* Issue 8 cases 3 and 5 on the call path (Note [Checking C arguments]): a C
 * argument is a bare pointer an unboxed kernel trusts, so a NULL Tensor, a
 * list with a length but no data, or a NULL element of a Tensor[] is
 * refused before any kernel or key-set computation reads it. */
TEST(call_refuses_null_c_arguments) {
  const disp_op *mm, *view, *cat, *sum;
  ASSERT_OK(disp_op_find("aten::mm", &mm));
  ASSERT_OK(disp_op_find("aten::view", &view));
  ASSERT_OK(disp_op_find("aten::cat", &cat));
  ASSERT_OK(disp_op_find("aten::sum.dim_IntList", &sum));
  int64_t sizes[] = {2, 2};
  disp_tensor *a, *out = NULL;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, cpu, &a));
  ASSERT_STATUS(disp_call(mm, (disp_tensor *)NULL, a, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: self is NULL (argument 1 of aten::mm, type Tensor)");
  ASSERT_STATUS(disp_redispatch(mm, disp_keyset_of(DISP_KEY_CPU), a, (disp_tensor *)NULL, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_redispatch: mat2 is NULL (argument 2 of aten::mm, type Tensor)");
  ASSERT_STATUS(disp_call(view, a, (disp_int_list){NULL, 2}, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: size.data is NULL with len 2 (argument 2 of aten::view, type SymInt[])");
  ASSERT_STATUS(disp_call(sum, a, (disp_opt_int_list){{NULL, 1}, true}, false, (int32_t)-1, &out),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: dim.value.data is NULL with len 1 (argument 2 of aten::sum.dim_IntList, type int[1]?)");
  ASSERT_STATUS(disp_call(cat, (disp_tensor_list){NULL, 2}, (int64_t)0, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: tensors.data is NULL with len 2 (argument 1 of aten::cat, type Tensor[])");
  disp_tensor *two[] = {a, NULL};
  ASSERT_STATUS(disp_call(cat, (disp_tensor_list){two, 2}, (int64_t)0, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: tensors.data[1] is NULL (argument 1 of aten::cat, type Tensor[]: "
                                   "only a Tensor?[] may hold None)");
  disp_fn entry;
  ASSERT_OK(disp_op_typed_entry(mm, &entry));
  disp_status (*typed_mm)(disp_tensor *, disp_tensor *, disp_tensor **) =
      (disp_status(*)(disp_tensor *, disp_tensor *, disp_tensor **))entry;
  ASSERT_STATUS(typed_mm(NULL, a, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "the typed entry: self is NULL (argument 1 of aten::mm, type Tensor)");
  ASSERT_TRUE(out == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  /* what the schema lets be None still is: a Tensor?[] element, an empty list */
  disp_library *def = NULL, *lib = NULL;
  const disp_op *opt;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "tensorside", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "opt(Tensor?[] xs, int[] n) -> ()", NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "tensorside", DISP_KEY_CPU, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "opt", disp_kernel_boxed(accept_all, NULL, NULL), NULL));
  ASSERT_OK(disp_op_find("tensorside::opt", &opt));
  ASSERT_OK(disp_call(opt, (disp_tensor_list){two, 2}, (disp_int_list){NULL, 0}));
  disp_library_free(lib);
  disp_library_free(def);
  disp_tensor_release(a);
  return 0;
}

TEST(storage_resize_keeps_prefix) {
  disp_storage *st;
  ASSERT_OK(disp_storage_new(4, cpu, &st));
  ASSERT_TRUE(disp_storage_resizable(st));
  memcpy(disp_storage_data(st), "abcd", 4);
  ASSERT_OK(disp__storage_resize(st, 100));
  ASSERT_EQ_INT(disp_storage_nbytes(st), 100);
  ASSERT_TRUE(memcmp(disp_storage_data(st), "abcd", 4) == 0);
  ASSERT_OK(disp__storage_resize(st, 2));
  ASSERT_TRUE(memcmp(disp_storage_data(st), "ab", 2) == 0);
  ASSERT_OK(disp__storage_resize(st, 0));
  ASSERT_TRUE(disp_storage_data(st) == NULL);
  disp_storage_release(st);

  ASSERT_OK(disp_storage_new(16, meta, &st));
  ASSERT_OK(disp__storage_resize(st, 1 << 20));
  ASSERT_EQ_INT(disp_storage_nbytes(st), 1 << 20);
  ASSERT_TRUE(disp_storage_data(st) == NULL);
  disp_storage_release(st);
  return 0;
}

/* Threads share a tensor: retain/release, views and version bumps race on
 * the atomics only (run under TSan to check the orderings). */
static void *hammer(void *arg) {
  disp_tensor *t = arg;
  int64_t sizes[] = {2};
  for (int i = 0; i < 2000; i++) {
    disp_tensor_release(disp_tensor_retain(t));
    disp_tensor *v;
    if (disp_tensor_new_view(t, sizes, NULL, 1, i % 3, &v) != DISP_OK) return (void *)1;
    if (disp_tensor_bump_version(v) != DISP_OK) return (void *)1;
    disp_tensor_release(v);
  }
  return NULL;
}

TEST(refcounts_are_thread_safe) {
  int64_t sizes[] = {4};
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu, &t));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) ASSERT_EQ_INT(pthread_create(&th[i], NULL, hammer, t), 0);
  for (int i = 0; i < 4; i++) {
    void *rc;
    pthread_join(th[i], &rc);
    ASSERT_TRUE(rc == NULL);
  }
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1);
  ASSERT_EQ_INT(disp_storage_refcount(disp_tensor_storage(t)), 1);
  ASSERT_EQ_INT(disp_tensor_version(t), 8000);
  disp_tensor_release(t);
  return 0;
}

/* Last: the rename is process-wide and set-once. */
TEST(privateuse1_rename) {
  ASSERT_STATUS(disp_device_rename_privateuse1("cuda"), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "rename_privateuse1_backend: 'cuda' is already the name of device type CUDA");
  ASSERT_STATUS(disp_device_rename_privateuse1("Npu"), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_rename_privateuse1("npu0"), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_rename_privateuse1(""), DISP_ERR_INVALID_ARG);
  ASSERT_OK(disp_device_rename_privateuse1("npu"));
  ASSERT_OK(disp_device_rename_privateuse1("npu")); /* the same name again is fine */
  ASSERT_STATUS(disp_device_rename_privateuse1("tpu"), DISP_ERR_DUPLICATE);
  ASSERT_EQ_STR(disp_last_error(), "torch.register_privateuse1_backend() has already been set! Current backend: npu");

  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE1), "npu");
  ASSERT_EQ_STR(fmt_dev(pu1), "npu:0");
  disp_device d;
  ASSERT_OK(disp_device_parse("npu:1", &d));
  ASSERT_TRUE(disp_device_equal(d, disp_device_make(DISP_BACKEND_PRIVATEUSE1, 1)));
  ASSERT_OK(disp_device_parse("privateuseone", &d));
  ASSERT_EQ_INT(d.type, DISP_BACKEND_PRIVATEUSE1);
  ASSERT_STATUS(disp_device_parse("tpu", &d), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), ", npu device type at start of device string: tpu");

  int64_t sizes[] = {1};
  disp_tensor *t;
  ASSERT_STATUS(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, pu1, &t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "no allocator registered for device type PrivateUse1 (npu)");
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(dtype_table),
    TEST_ENTRY(dtype_parse_aliases_and_errors),
    TEST_ENTRY(device_format_and_parse),
    TEST_ENTRY(device_parse_errors),
    TEST_ENTRY(device_parse_refuses_bad_indices),
    TEST_ENTRY(default_keysets_match_pytorch),
    TEST_ENTRY(created_tensors_carry_default_keysets),
    TEST_ENTRY(privateuse1_allocator_required_and_used),
    TEST_ENTRY(cpu_allocator_aligned_and_restorable),
    TEST_ENTRY(empty_contiguous_strides),
    TEST_ENTRY(empty_strided_storage_size),
    TEST_ENTRY(zero_dim_and_zero_size),
    TEST_ENTRY(many_dims_spill_to_heap),
    TEST_ENTRY(bad_sizes_dtype_device),
    TEST_ENTRY(meta_tensors_have_no_memory),
    TEST_ENTRY(refcounts_balance),
    TEST_ENTRY(views_share_storage_and_outlive_base),
    TEST_ENTRY(view_bounds_checked),
    TEST_ENTRY(version_counter_shared_by_views),
    TEST_ENTRY(inference_tensors),
    TEST_ENTRY(requires_grad),
    TEST_ENTRY(autograd_slot_destroyed_with_tensor),
    TEST_ENTRY(opaque_tensor_release_called_once),
    TEST_ENTRY(storage_wrapping_caller_memory),
    TEST_ENTRY(storage_refuses_length_without_data),
    TEST_ENTRY(constructors_refuse_array_without_count),
    TEST_ENTRY(null_getters_answer_none),
    TEST_ENTRY(call_refuses_null_out_pointer),
    TEST_ENTRY(call_refuses_null_c_arguments),
    TEST_ENTRY(storage_resize_keeps_prefix),
    TEST_ENTRY(refcounts_are_thread_safe),
    TEST_ENTRY(privateuse1_rename),
    TEST_END,
};

TEST_MAIN()
