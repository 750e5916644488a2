/*
 * test_second_copy.c - issue 8 case 18: a plugin linked against
 * libdispatch.so, loaded into this program, which carries libdispatch.a,
 * finds the shared copy refusing every lookup and registration with a clear
 * message instead of a second silent registry (Note [A second copy]); the
 * program's own copy, initialised first, keeps working.
 */
#include <dlfcn.h>
#include <disp.h>
#include <disp/aten.h>

#include "second_copy_plugin.h"
#include "test.h"

#define SECOND_COPY_MESSAGE \
  "libdispatch: a second copy of the library was loaded into this process (static and shared?): this copy is in "

static void *g_plugin;

/* This copy initialises first, alone; then the plugin brings the shared one. */
static int load_plugin(void) {
  disp_init();
  if (!g_plugin) g_plugin = dlopen(SECOND_COPY_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!g_plugin) fprintf(stderr, "dlopen: %s\n", dlerror());
  return g_plugin != NULL;
}

/* Calls one of the plugin's entries (second_copy_plugin.h). */
static disp_status plugin_call(const char *entry, const char **message) {
  second_copy_entry fn;
  *(void **)&fn = dlsym(g_plugin, entry);
  if (!fn) return DISP_ERR_PLUGIN;
  return fn(message);
}

/* Calls one plugin entry: the shared copy must refuse it, naming both copies. */
static int refused(const char *entry) {
  ASSERT_TRUE(load_plugin());
  const char *message = "";
  ASSERT_STATUS(plugin_call(entry, &message), DISP_ERR_DUPLICATE);
  ASSERT_STARTS_WITH(message, SECOND_COPY_MESSAGE);
  ASSERT_CONTAINS(message, "libdispatch.so");
  ASSERT_CONTAINS(message, ", another in the program; this one refuses every registration and call. "
                           "Link the program and its plugins against one libdispatch, the shared library");
  return 0;
}

TEST(static_copy_works_before_the_plugin_loads) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::add.Tensor", &op)); /* this copy initialises alone */
  ASSERT_TRUE(load_plugin());
  return 0;
}

TEST(shared_copy_refuses_lookups) { return refused("second_copy_find"); }

TEST(shared_copy_refuses_registrations) { return refused("second_copy_register"); }

TEST(shared_copy_reports_its_refusal_in_the_registry_check) { return refused("second_copy_check"); }

TEST(static_copy_keeps_working_and_saw_none_of_the_plugin) {
  ASSERT_TRUE(load_plugin());
  const disp_op *op = NULL;
  ASSERT_STATUS(disp_op_find("second_copy_static::f", &op), DISP_ERR_OP_NOT_FOUND);
  int64_t size = 2;
  disp_tensor *a = NULL, *sum = NULL;
  ASSERT_OK(disp_tensor_empty(&size, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &a));
  float *x = disp_tensor_data_ptr(a);
  x[0] = 1.5f;
  x[1] = -2.0f;
  disp_status st = disp_aten_add_Tensor(a, a, disp_scalar_int(1), &sum);
  float got = st == DISP_OK ? ((float *)disp_tensor_data_ptr(sum))[1] : 0.0f;
  disp_tensor_release(sum);
  disp_tensor_release(a);
  ASSERT_OK(st);
  ASSERT_TRUE(got == -4.0f);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(static_copy_works_before_the_plugin_loads),
    TEST_ENTRY(shared_copy_refuses_lookups),
    TEST_ENTRY(shared_copy_refuses_registrations),
    TEST_ENTRY(shared_copy_reports_its_refusal_in_the_registry_check),
    TEST_ENTRY(static_copy_keeps_working_and_saw_none_of_the_plugin),
    TEST_END};

TEST_MAIN()
