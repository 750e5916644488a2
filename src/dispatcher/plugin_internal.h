/*
 * plugin_internal.h - what plugin.c offers the dispatcher's lifecycle
 * (library.c): DISP_PLUGINS at init, unloading everything at shutdown.
 */
#ifndef DISP_PLUGIN_INTERNAL_H
#define DISP_PLUGIN_INTERNAL_H

/* Loads the plugins DISP_PLUGINS names, once per dispatcher lifetime; each
 * failure goes to the warning handler, and the first stays in
 * disp_last_error(). Called by disp_init() with no lock held. */
void disp__plugins_autoload(void);

/* Unloads every loaded plugin, newest first, and frees every handle; the
 * next disp_init() autoloads again. Called by disp_shutdown() first. */
void disp__plugins_shutdown(void);

#endif
