/*
 * test_openreg.c - the emulated-device plugin (examples/openreg/) as a
 * program uses it (issue 11, "An emulated device in a plugin"): loaded,
 * used, unloaded and loaded again in one process; its memory stays
 * PROT_NONE to the host, so anything the library read directly would fault
 * here; autograd uses its own backward kernel and its MyAddFunction; its
 * autocast policy; the CPU fallback for the rest.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>

#include <disp.h>
#include <disp/aten.h>
#include <disp/backend.h>

#include "test.h"

static disp_plugin *g_plugin;

static int load(void) {
  if (g_plugin && disp_plugin_is_loaded(g_plugin)) return 0;
  return disp_plugin_load(OPENREG_PLUGIN, &g_plugin) != DISP_OK;
}

static disp_device dev(int index) { return disp_device_make(DISP_BACKEND_PRIVATEUSE1, index); }

/* A CPU float32 tensor 0.5, 1.5, ... - 3 (so relu has something to cut). */
static disp_tensor *cpu_values(int64_t rows, int64_t cols) {
  int64_t sizes[2] = {rows, cols};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  for (int64_t i = 0; i < rows * cols; i++) ((float *)disp_tensor_data_ptr(t))[i] = (float)i + 0.5f - 3.0f;
  return t;
}

static disp_tensor *on(disp_tensor *t, disp_device d) {
  disp_tensor *r = NULL;
  disp_opt_device o = {d.type, d.index, true};
  disp_aten_to_device(t, o, disp_tensor_dtype(t), false, false, -1, &r);
  return r;
}

static disp_tensor *back(disp_tensor *t) { return on(t, disp_device_make(DISP_BACKEND_CPU, -1)); }

static int equal(disp_tensor *a, disp_tensor *b) {
  int same = 0;
  return disp_tensor_allclose(a, b, 1e-6, 1e-6, 0, &same) == DISP_OK && same;
}

TEST(loads_with_its_name_and_two_devices) {
  ASSERT_TRUE(!load());
  ASSERT_EQ_STR(disp_plugin_name(g_plugin), "openreg");
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE1), "openreg");
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_PRIVATEUSE1), 2);
  disp_device d;
  ASSERT_OK(disp_device_parse("openreg:1", &d));
  ASSERT_EQ_INT(d.type, DISP_BACKEND_PRIVATEUSE1);
  ASSERT_EQ_INT(d.index, 1);
  return 0;
}

/* add, mm and relu natively; the library prints and compares device
 * tensors through the copy hooks (direct reads would fault). */
TEST(native_kernels_and_printing) {
  ASSERT_TRUE(!load());
  disp_tensor *a = cpu_values(2, 3), *b = cpu_values(3, 2), *da = on(a, dev(0)), *db = on(b, dev(0));
  disp_tensor *dm = NULL, *cm = NULL, *dr = NULL, *cr = NULL;
  ASSERT_TRUE(da && db);
  ASSERT_EQ_INT(disp_tensor_device(da).type, DISP_BACKEND_PRIVATEUSE1);
  ASSERT_OK(disp_aten_mm(da, db, &dm));
  ASSERT_OK(disp_aten_mm(a, b, &cm));
  ASSERT_OK(disp_aten_relu(dm, &dr));
  ASSERT_OK(disp_aten_relu(cm, &cr));
  ASSERT_EQ_INT(disp_tensor_device(dr).type, DISP_BACKEND_PRIVATEUSE1);
  int same = 0;
  ASSERT_OK(disp_tensor_allclose(dr, cr, 1e-6, 1e-6, 0, &same));
  ASSERT_TRUE(same);
  char *text = NULL;
  ASSERT_OK(disp_tensor_format(dr, &text));
  ASSERT_CONTAINS(text, "device='openreg:0'");
  free(text);
  disp_tensor *items[] = {a, b, da, db, dm, cm, dr, cr};
  for (size_t i = 0; i < sizeof items / sizeof *items; i++) disp_tensor_release(items[i]);
  return 0;
}

/* relu's backward reaches openreg's own threshold_backward (seed 000);
 * add.Tensor's AutogradPrivateUse1 kernel is MyAddFunction. */
TEST(autograd_uses_the_device_kernels) {
  ASSERT_TRUE(!load());
  void *so = dlopen(OPENREG_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_TRUE(so != NULL);
  long (*calls)(void) = NULL;
  *(void **)&calls = dlsym(so, "openreg_threshold_backward_calls");
  dlclose(so); /* only the reference RTLD_NOLOAD added */
  ASSERT_TRUE(calls != NULL);
  long before = calls();
  disp_tensor *c = cpu_values(2, 3), *x = on(c, dev(0)), *y = NULL, *z = NULL, *s = NULL;
  ASSERT_OK(disp_tensor_set_requires_grad(x, 1));
  ASSERT_OK(disp_aten_relu(x, &y));
  ASSERT_OK(disp_aten_add_Tensor(y, x, disp_scalar_int(2), &z));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(z)), "MyAddFunctionBackward");
  ASSERT_OK(disp_aten_sum(z, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(calls() > before);
  /* d/dx (relu(x) + 2x) = (x > 0) + 2 */
  disp_tensor *g = back(disp_tensor_grad(x));
  ASSERT_TRUE(g != NULL);
  const float *gv = disp_tensor_data_ptr(g), *xv = disp_tensor_data_ptr(c);
  for (int i = 0; i < 6; i++) ASSERT_TRUE(gv[i] == (xv[i] > 0 ? 3.0f : 2.0f));
  disp_tensor *items[] = {c, x, y, z, s, g};
  for (size_t i = 0; i < sizeof items / sizeof *items; i++) disp_tensor_release(items[i]);
  return 0;
}

/* Under autocast for the device, openreg's policy runs mm in bfloat16. */
TEST(autocast_policy) {
  ASSERT_TRUE(!load());
  disp_tensor *a = cpu_values(2, 2), *da = on(a, dev(0)), *r = NULL;
  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  disp_status st = disp_aten_mm(da, da, &r);
  ASSERT_OK(disp_autocast_exit(&g));
  ASSERT_OK(st);
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_PRIVATEUSE1);
  disp_tensor_release(r), disp_tensor_release(da), disp_tensor_release(a);
  return 0;
}

/* An op openreg has no kernel for (exp) runs through the CPU fallback and
 * comes back on the device it came from, device 1 included. */
TEST(cpu_fallback_for_the_rest) {
  ASSERT_TRUE(!load());
  disp_tensor *a = cpu_values(3, 3), *da = on(a, dev(1)), *de = NULL, *ce = NULL;
  ASSERT_OK(disp_aten_exp(da, &de));
  ASSERT_EQ_INT(disp_tensor_device(de).type, DISP_BACKEND_PRIVATEUSE1);
  ASSERT_EQ_INT(disp_tensor_device(de).index, 1);
  ASSERT_OK(disp_aten_exp(a, &ce));
  disp_tensor *h = back(de);
  ASSERT_TRUE(h && equal(h, ce));
  disp_tensor *items[] = {a, da, de, ce, h};
  for (size_t i = 0; i < sizeof items / sizeof *items; i++) disp_tensor_release(items[i]);
  return 0;
}

/* abs and tanh reach openreg's loops (seed 003, scenario two): the library
 * does broadcasting and layout (a transposed input here), the loop the
 * arithmetic. */
TEST(stub_loops) {
  ASSERT_TRUE(!load());
  ASSERT_TRUE(disp_stub_get(DISP_STUB_TANH, DISP_BACKEND_PRIVATEUSE1) != NULL);
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE1) != NULL);
  disp_tensor *a = cpu_values(3, 4), *at = NULL, *dt = NULL, *dr = NULL, *cr = NULL, *h = NULL;
  ASSERT_OK(disp_aten_transpose_int(a, 0, 1, &at));
  dt = on(at, dev(0));
  ASSERT_OK(disp_aten_tanh(dt, &dr));
  ASSERT_OK(disp_aten_tanh(at, &cr));
  h = back(dr);
  ASSERT_TRUE(h && equal(h, cr));
  disp_tensor *items[] = {a, at, dt, dr, cr, h};
  for (size_t i = 0; i < sizeof items / sizeof *items; i++) disp_tensor_release(items[i]);
  return 0;
}

/* The dispatch trace of fn() (stderr while the trace is on), as a string
 * the caller frees. */
static char *trace_of(disp_status (*fn)(disp_tensor *, disp_tensor **), disp_tensor *x, disp_status *st) {
  FILE *tmp = tmpfile();
  int saved = dup(2);
  if (!tmp || saved < 0) return NULL;
  fflush(stderr);
  dup2(fileno(tmp), 2);
  disp_trace_set(1);
  disp_tensor *r = NULL;
  *st = fn(x, &r);
  disp_trace_set(0);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  disp_tensor_release(r);
  long n = ftell(tmp);
  char *text = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
  rewind(tmp);
  if (text && fread(text, 1, (size_t)n, tmp) != (size_t)n) text[0] = '\0';
  fclose(tmp);
  return text;
}

/* The trace tells native kernels from the CPU fallback. */
TEST(trace_shows_the_fallback) {
  ASSERT_TRUE(!load());
  disp_tensor *a = cpu_values(2, 2), *da = on(a, dev(0));
  disp_status st;
  char *fell = trace_of(disp_aten_exp, da, &st);
  ASSERT_OK(st);
  ASSERT_CONTAINS(fell, "[cpu_fallback] op=[aten::exp], key=[PrivateUse1]");
  char *native = trace_of(disp_aten_relu, da, &st);
  ASSERT_OK(st);
  ASSERT_CONTAINS(native, "op=[aten::relu], key=[PrivateUse1]");
  ASSERT_TRUE(strstr(native, "cpu_fallback") == NULL);
  free(fell), free(native);
  disp_tensor_release(da), disp_tensor_release(a);
  return 0;
}

/* Unloaded, its kernels and name are gone and a call says so; loaded
 * again, it works as before (its static blocks ran again). */
TEST(unload_and_reload) {
  ASSERT_TRUE(!load());
  ASSERT_OK(disp_plugin_unload(g_plugin));
  ASSERT_FALSE(disp_plugin_is_loaded(g_plugin));
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::mm", &op));
  ASSERT_FALSE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1));
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE1), "privateuseone");
  ASSERT_TRUE(disp_allocator_get(DISP_BACKEND_PRIVATEUSE1) == NULL);
  ASSERT_TRUE(disp_device_hooks_get(DISP_BACKEND_PRIVATEUSE1) == NULL);
  ASSERT_TRUE(disp_stub_get(DISP_STUB_TANH, DISP_BACKEND_PRIVATEUSE1) == NULL);
  disp_device d;
  ASSERT_STATUS(disp_device_parse("openreg:0", &d), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(!load());
  ASSERT_TRUE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1));
  disp_tensor *a = cpu_values(2, 2), *da = on(a, dev(0)), *s = NULL, *h = NULL;
  ASSERT_OK(disp_aten_add_Tensor(da, da, disp_scalar_int(1), &s));
  h = back(s);
  ASSERT_TRUE(h && ((const float *)disp_tensor_data_ptr(h))[3] == 2 * 0.5f);
  disp_tensor *items[] = {a, da, s, h};
  for (size_t i = 0; i < sizeof items / sizeof *items; i++) disp_tensor_release(items[i]);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(loads_with_its_name_and_two_devices),
    TEST_ENTRY(native_kernels_and_printing),
    TEST_ENTRY(autograd_uses_the_device_kernels),
    TEST_ENTRY(autocast_policy),
    TEST_ENTRY(cpu_fallback_for_the_rest),
    TEST_ENTRY(stub_loops),
    TEST_ENTRY(trace_shows_the_fallback),
    TEST_ENTRY(unload_and_reload),
    TEST_END};
TEST_MAIN()
