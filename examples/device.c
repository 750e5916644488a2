/*
 * device.c - the examples' --device helpers (device.h).
 */
#include "device.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* <dir of this program>/../lib/lib<name>.so: where the build puts plugins. */
static int plugin_path(const char *name, char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash) return 0;
  *slash = '\0';
  size_t used = strlen(buf);
  return snprintf(buf + used, len - used, "/../lib/lib%s.so", name) < (int)(len - used);
}

disp_status example_find_device(const char *name, disp_device *out) {
  disp_device d;
  disp_status st = disp_device_parse(name, &d);
  if (st != DISP_OK && name && !strchr(name, ':')) {
    char path[4096];
    disp_plugin *p = NULL;
    if (plugin_path(name, path, sizeof path) && disp_plugin_load(path, &p) == DISP_OK) st = disp_device_parse(name, &d);
  }
  if (st != DISP_OK) return st;
  if (d.index < 0 && d.type != DISP_BACKEND_CPU) d.index = 0;
  *out = d;
  return DISP_OK;
}

disp_status example_to_device(disp_tensor **t, disp_device dev) {
  disp_device at = disp_tensor_device(*t);
  if (at.type == dev.type && (at.index == dev.index || dev.type == DISP_BACKEND_CPU)) return DISP_OK;
  int requires = disp_tensor_requires_grad(*t);
  disp_tensor *moved = NULL;
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status st = disp_aten_to_device(*t, (disp_opt_device){dev.type, dev.index, true}, disp_tensor_dtype(*t), false,
                                       false, -1, &moved);
  disp_tls_restore(g);
  if (st == DISP_OK && requires) st = disp_tensor_set_requires_grad(moved, 1);
  if (st != DISP_OK) return disp_tensor_release(moved), st;
  disp_tensor_release(*t);
  *t = moved;
  return DISP_OK;
}
