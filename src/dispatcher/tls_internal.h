/*
 * tls_internal.h - raw thread-local dispatch state, for the call path.
 */
#ifndef DISP_TLS_INTERNAL_H
#define DISP_TLS_INTERNAL_H

#include <stdint.h>

/* XOR-with-default encoding: all zero means PyTorch's defaults. */
typedef struct disp__tls_raw {
  uint64_t included_xor;
  uint64_t excluded_xor;
  unsigned char grad_disabled;
  unsigned char inference_mode;
  int trace_depth; /* nesting level for DISP_SHOW_DISPATCH_TRACE */
} disp__tls_raw;

extern _Thread_local disp__tls_raw disp__tls;

#endif
