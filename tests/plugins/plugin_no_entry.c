/*
 * plugin_no_entry.c - a shared object without disp_plugin_init: refused,
 * and its static block (queued by its constructor) never runs.
 */
#include <disp.h>

DISP_LIBRARY(plugnoentry, m) {
  disp_library_def(m, "g(Tensor self) -> Tensor", NULL);
}
