/*
 * runtime_internal.h - what the runtime module's files share (Note
 * [Start-up] in init.c).
 */
#ifndef DISP_RUNTIME_INTERNAL_H
#define DISP_RUNTIME_INTERNAL_H

/* Hands the built-in libraries to the dispatcher (a no-op once they are
 * there). disp_init() and disp_shutdown() both call it, so a program linking
 * libdispatch.a that refers to either links init.c, whose constructor offers
 * the list before any first use. Lock-free. */
void disp__runtime_offer_builtins(void);

#endif
