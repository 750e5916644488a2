/*
 * plugin_taken.c - a second plugin wanting the device name plugin_good
 * holds: its init fails, and what it registered before is rolled back.
 */
#include <disp.h>

DISP_LIBRARY(plugtaken, m) {
  disp_library_def(m, "t(Tensor self) -> Tensor", NULL);
}

DISP_PLUGIN(self) {
  (void)self;
  return disp_device_rename_privateuse1("plugdev");
}
