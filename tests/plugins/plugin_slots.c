/*
 * plugin_slots.c - built twice (plugin_slots_a, plugin_slots_b: SLOT_TAG "a"
 * or "b") for test_plugin's unload-order cases: each installs an allocator
 * and device hooks on PrivateUse2 whose ctx is its own tag, so the test can
 * tell whose value is in force by the ctx pointer it saw at load.
 */
#include <disp.h>
#include <disp/plugin.h>

#include "plugin_common.h"

static const char tag[] = SLOT_TAG;

static int count(void *ctx) { return ctx == tag ? 1 : 0; }
static int current(void *ctx) { return ctx == tag ? 0 : -1; }
static disp_status set(int index, void *ctx) { return index == 0 && ctx == tag ? DISP_OK : DISP_ERR_INVALID_ARG; }

DISP_PLUGIN(self) {
  (void)self;
  disp_allocator a = {plugin_heap_alloc, plugin_heap_free, (void *)tag, NULL};
  disp_device_hooks h = {0};
  h.device_count = count, h.get_device = current, h.set_device = set, h.ctx = (void *)tag;
  disp_status st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE2, &a);
  return st == DISP_OK ? disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE2, &h) : st;
}
