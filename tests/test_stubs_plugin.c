/*
 * test_stubs_plugin.c - a stub registered by a plugin (tests/plugin_stubs.c)
 * is the plugin's: it serves its operator while the plugin is loaded and
 * goes, with the library's kernel it brought, on unload; load, unload, load
 * again works. Linked with the shared library, as a program loading
 * plugins is.
 */
#include "test.h"

static disp_tensor *pu_tensor(const float *v, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_PRIVATEUSE1, 0), &t) != DISP_OK)
    return NULL;
  float *p = disp_tensor_data_ptr(t); /* the plugin's "device" memory is host memory */
  for (int64_t i = 0; i < n; i++) p[i] = v[i];
  return t;
}

TEST(plugin_stub_goes_with_the_plugin) {
  const disp_op *neg = NULL;
  ASSERT_OK(disp_op_find("aten::neg", &neg));
  for (int round = 0; round < 2; round++) {
    disp_plugin *p = NULL;
    ASSERT_OK(disp_plugin_load(STUBS_PLUGIN, &p));
    ASSERT_TRUE(disp_stub_get(DISP_STUB_NEG, DISP_BACKEND_PRIVATEUSE1) != NULL);
    ASSERT_TRUE(disp_op_has_kernel(neg, DISP_KEY_PRIVATEUSE1));
    const float v[3] = {1.5f, -2, 0};
    disp_tensor *x = pu_tensor(v, 3), *r = NULL;
    ASSERT_TRUE(x != NULL);
    ASSERT_OK(disp_aten_neg(x, &r));
    const float *out = disp_tensor_data_ptr(r);
    ASSERT_TRUE(out[0] == -1.5f && out[1] == 2 && out[2] == -0.0f);
    disp_tensor_release(r);
    disp_tensor_release(x); /* before the plugin's allocator goes */
    ASSERT_OK(disp_plugin_unload(p));
    ASSERT_TRUE(disp_stub_get(DISP_STUB_NEG, DISP_BACKEND_PRIVATEUSE1) == NULL);
    ASSERT_FALSE(disp_op_has_kernel(neg, DISP_KEY_PRIVATEUSE1));
  }
  return 0;
}

TEST_LIST = {TEST_ENTRY(plugin_stub_goes_with_the_plugin), TEST_END};
TEST_MAIN()
