/*
 * plugin_bad_abi.c - a plugin claiming another ABI version (as one built
 * against other headers would): refused before its static block or its
 * init runs, so plugbadabi::g never exists and the device keeps its name.
 */
#include <disp.h>

DISP_LIBRARY(plugbadabi, m) {
  disp_library_def(m, "g(Tensor self) -> Tensor", NULL);
}

DISP_PLUGIN_EXPORT const unsigned disp_plugin_abi_version = DISP_ABI_VERSION + 1;

DISP_PLUGIN_EXPORT disp_status disp_plugin_init(disp_plugin *self);
DISP_PLUGIN_EXPORT disp_status disp_plugin_init(disp_plugin *self) {
  (void)self;
  return disp_device_rename_privateuse1("badabidev");
}
