/*
 * second_copy_plugin.c - a plugin linked against libdispatch.so, loaded by
 * test_second_copy into a program that carries libdispatch.a. Its calls go to
 * the shared copy, which must refuse them (Note [A second copy]).
 */
#include "second_copy_plugin.h"

/* Queued on the shared copy by its constructor: the refusing copy reports it. */
DISP_LIBRARY(second_copy_static, m) {
  disp_library_def(m, "f(Tensor self) -> Tensor", NULL);
}

disp_status second_copy_find(const char **message) {
  const disp_op *op = NULL;
  disp_status st = disp_op_find("aten::add.Tensor", &op);
  *message = disp_last_error();
  return st;
}

disp_status second_copy_register(const char **message) {
  disp_library *lib = NULL;
  disp_status st = disp_library_new(DISP_LIBRARY_DEF, "second_copy_new", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &lib);
  *message = disp_last_error();
  disp_library_free(lib);
  return st;
}

disp_status second_copy_check(const char **message) {
  disp_status st = disp_registry_check();
  *message = disp_last_error();
  return st;
}
