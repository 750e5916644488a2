/*
 * second_copy_plugin.h - the entry points of tests/second_copy_plugin.c, a
 * plugin linked against libdispatch.so that test_second_copy.c (which carries
 * the static library) loads. Each returns the shared copy's status and points
 * *message at the shared copy's thread-local message.
 */
#ifndef SECOND_COPY_PLUGIN_H
#define SECOND_COPY_PLUGIN_H

#include <disp.h>

typedef disp_status (*second_copy_entry)(const char **message);

disp_status second_copy_find(const char **message);     /* disp_op_find("aten::add.Tensor") */
disp_status second_copy_register(const char **message); /* disp_library_new(DEF, "second_copy_new") */
disp_status second_copy_check(const char **message);    /* disp_registry_check() */

#endif
