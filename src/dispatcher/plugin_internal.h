/*
 * plugin_internal.h - what plugin.c offers the lifecycle (the dispatcher's
 * drain in lifecycle.c, the runtime's disp_init/disp_shutdown in src/runtime/):
 * DISP_PLUGINS at init, unloading everything at shutdown.
 */
#ifndef DISP_PLUGIN_INTERNAL_H
#define DISP_PLUGIN_INTERNAL_H

/* Loads the plugins DISP_PLUGINS names, once per dispatcher lifetime; each
 * failure goes to the warning handler, and the first stays in
 * disp_last_error(). Called by disp_init() with no lock held. */
void disp__plugins_autoload(void);

/* Unloads every loaded plugin, newest first, and frees every handle; the
 * next disp_init() autoloads again. Called by disp_shutdown() first
 * (src/runtime/shutdown.c), with no lock held. */
void disp__plugins_shutdown(void);

#include <stddef.h>

/*
 * disp__plugin_file_check - what can be checked of a plugin file before
 * dlopen runs any of it (plugin_file.c): a non-empty path of a readable
 * regular file holding an ELF shared object of this process's class and
 * machine, whose headers and loadable segments lie inside the file (dlopen
 * maps a truncated file and dies of SIGBUS touching the missing pages).
 * A path without '/' is left to dlopen's search, unchecked.
 * Returns 0 when the file passes, else -1 with the cause in why.
 */
int disp__plugin_file_check(const char *path, char *why, size_t why_len);

/*
 * disp__plugin_symbol_is_function - 1 when addr, a symbol dlsym found in a
 * loaded object, is a function (STT_FUNC or STT_GNU_IFUNC in the object's
 * symbol table), 0 for data or anything unknown.
 */
int disp__plugin_symbol_is_function(void *addr);

#endif
