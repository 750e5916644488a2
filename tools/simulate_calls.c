/*
 * simulate_calls.c - `disp simulate --calls`: the ten call scenarios.
 * Calls arrive with the calls issue; until then this reports so.
 */
#include <stdio.h>

#include "simulate.h"

int disp_tool_simulate_calls(const sim_script *s, FILE *out);

int disp_tool_simulate_calls(const sim_script *s, FILE *out) {
  (void)s, (void)out;
  fprintf(stderr, "disp simulate --calls: calling operators is not available yet\n");
  return 1;
}
