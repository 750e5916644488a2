/*
 * plugin_bad_block.c - a static block that fails (a schema that does not
 * parse): the load fails as PyTorch's import would, naming the block, and
 * the blocks that ran before it are rolled back. Its init never runs.
 */
#include <disp.h>

DISP_LIBRARY(plugbadblock, m) {
  disp_library_def(m, "ok(Tensor self) -> Tensor", NULL);
}

DISP_LIBRARY_FRAGMENT(plugbadblock, m) {
  disp_library_def(m, "broken(Tensor self -> Tensor", NULL);
}

DISP_PLUGIN(self) {
  (void)self;
  return disp_device_rename_privateuse1("badblockdev");
}
