/*
 * plugin_data_entry.c - a plugin whose entry point's name is taken by a data
 * object: the loader must refuse it, not call its bytes (issue 18, class 2).
 */
#include <disp/plugin.h>

DISP_PLUGIN_EXPORT extern const unsigned disp_plugin_abi_version;
DISP_PLUGIN_EXPORT const unsigned disp_plugin_abi_version = DISP_ABI_VERSION;
DISP_PLUGIN_EXPORT extern const unsigned char disp_plugin_init[16];
DISP_PLUGIN_EXPORT const unsigned char disp_plugin_init[16] = {0xff, 0xff, 0xff, 0xff};
