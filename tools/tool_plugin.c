/*
 * tool_plugin.c - the --plugin option and device names (tool_plugin.h).
 */
#include "tool_plugin.h"

#include <stdio.h>

int disp_tool_load_plugin(const char *cmd, const char *path) {
  disp_plugin *p = NULL;
  if (disp_plugin_load(path, &p) == DISP_OK) return 0;
  fprintf(stderr, "disp %s: %s\n", cmd, disp_last_error());
  return 1;
}

int disp_tool_parse_device(const char *cmd, const char *name, disp_device *out) {
  disp_device d;
  if (disp_device_parse(name, &d) != DISP_OK) {
    fprintf(stderr, "disp %s: %s (a plugin's device needs --plugin first)\n", cmd, disp_last_error());
    return 1;
  }
  if (d.index < 0 && d.type != DISP_BACKEND_CPU && d.type != DISP_BACKEND_META) d.index = 0;
  *out = d;
  return 0;
}
