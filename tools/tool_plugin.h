/*
 * tool_plugin.h - what several `disp` commands share for backend plugins:
 * the --plugin option and device names a plugin registers.
 */
#ifndef DISP_TOOLS_TOOL_PLUGIN_H
#define DISP_TOOLS_TOOL_PLUGIN_H

#include <disp.h>

/* Loads the plugin at `path` for command `cmd` (disp_plugin_load); on
 * failure prints "disp CMD: <error>" to stderr and returns 1. */
int disp_tool_load_plugin(const char *cmd, const char *path);

/* Parses a device ("cpu", "meta", "openreg", "openreg:1") into *out; a
 * plugin device without an index gets device 0. On failure prints "disp
 * CMD: <error>" and returns 1. */
int disp_tool_parse_device(const char *cmd, const char *name, disp_device *out);

#endif
