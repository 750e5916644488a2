/* version.c - the run-time version. */
#include "disp/version.h"

unsigned disp_version(void) { return DISP_VERSION_HEX; }
const char *disp_version_string(void) { return DISP_VERSION_STRING; }
unsigned disp_abi_version(void) { return DISP_ABI_VERSION; }
