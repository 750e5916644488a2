/*
 * modes.c - process-wide autograd switches: the fallback mode and anomaly
 * detection.
 */
#include <stdatomic.h>

#include "autograd_internal.h"
#include "error_internal.h"

static atomic_int fallback_mode = DISP_AUTOGRAD_FALLBACK_WARN;
static atomic_int anomaly;

disp_status disp_autograd_set_fallback_mode(disp_autograd_fallback_mode mode) {
  if ((int)mode < DISP_AUTOGRAD_FALLBACK_NOTHING || mode > DISP_AUTOGRAD_FALLBACK_ERROR)
    return disp__fail(DISP_ERR_INVALID_ARG, "Unsupported AutogradFallbackMode: %d", (int)mode);
  atomic_store(&fallback_mode, (int)mode);
  return DISP_OK;
}

disp_autograd_fallback_mode disp_autograd_fallback_mode_get(void) {
  return (disp_autograd_fallback_mode)atomic_load(&fallback_mode);
}

void disp_autograd_set_detect_anomaly(int enabled) { atomic_store(&anomaly, enabled != 0); }

int disp_autograd_detect_anomaly(void) { return atomic_load(&anomaly); }

int disp__ag_anomaly(void) { return atomic_load_explicit(&anomaly, memory_order_relaxed); }
