/*
 * disp/plugin.h - backend plugins: load a shared object, attribute what it
 * registers, unload it.
 *
 * A plugin is a shared object (a CMake MODULE library) linked against
 * libdispatch.so. It exports two symbols, both written by DISP_PLUGIN:
 *
 *   #include <disp.h>
 *   DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) { ... }   // any static blocks
 *   DISP_PLUGIN(self) {                               // the entry point
 *     disp_status st = disp_device_rename_privateuse1("mydev");
 *     if (st != DISP_OK) return st;                   // all of it is undone
 *     return disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &my_allocator);
 *   }
 *
 * Note [Plugin entry point]
 *   const unsigned disp_plugin_abi_version   DISP_ABI_VERSION the plugin was
 *                                            compiled with (version.h)
 *   disp_status disp_plugin_init(disp_plugin *self)
 * disp_plugin_load() dlopens the file (RTLD_NOW | RTLD_LOCAL), whose
 * constructors only queue its static DISP_LIBRARY* blocks (library.h), then
 * checks, before any block runs: that the plugin brought no second copy of
 * libdispatch (Note [A second copy]), that both symbols exist and that the
 * ABI versions are equal. Then the blocks run (defs first), then init. Any
 * failure - a block's, init's non-OK status, an earlier check - undoes all of
 * it, dlcloses the file and fails with DISP_ERR_PLUGIN ("plugin 'name'
 * (path): <cause>"); the registry is as before.
 *
 * Note [Plugin attribution]
 * Everything the loading thread registers from dlopen to the end of init
 * belongs to the plugin: its static blocks, libraries it opens with
 * disp_library_new() (and so their kernels, defs and fallbacks), its
 * allocator (disp_allocator_register), its device name
 * (disp_device_rename_privateuse1) and its device hooks. disp_plugin_unload()
 * removes all of it, newest first, then dlcloses the file; calls afterwards
 * fail as for any missing kernel or operator ("Could not run 'myops::f' with
 * arguments from the 'PrivateUse1' backend ...", "Could not find schema for
 * ..."), never jump into unloaded code. Loading it again runs its static
 * blocks and init again. Not attributed, so not removed: registrations made
 * later (from a kernel, from the plugin's own threads) and process-wide
 * settings such as the warning handler. PyTorch has no unloading at all; the
 * caller of disp_plugin_unload must make sure that no other thread is inside
 * one of the plugin's kernels, and that no tensor, storage or handle whose
 * code or memory is the plugin's (a storage from its allocator, a kernel's
 * user_data) is still alive.
 *
 * DISP_PLUGINS: the library's initialisation, explicit (disp_init()) or
 * implicit (its first use), loads every path of the environment variable
 * DISP_PLUGINS, separated by ':', in order (PyTorch's backend autoload); a
 * plugin that fails is reported on the warning handler and in
 * disp_last_error(), once, and the others still load. disp_shutdown()
 * unloads every loaded plugin, newest first, and frees every handle.
 */
#ifndef DISP_PLUGIN_H
#define DISP_PLUGIN_H

#include "export.h"
#include "status.h"
#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct disp_plugin disp_plugin;

/* The entry point's type and the two symbol names (Note [Plugin entry point]). */
typedef disp_status (*disp_plugin_init_fn)(disp_plugin *self);
#define DISP_PLUGIN_INIT_SYMBOL "disp_plugin_init"
#define DISP_PLUGIN_ABI_SYMBOL "disp_plugin_abi_version"

#if defined(__GNUC__)
#  define DISP_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#  define DISP_PLUGIN_EXPORT
#endif

/*
 * DISP_PLUGIN(SELF) { ... return DISP_OK; } - defines both entry symbols in
 * a plugin: the ABI version it is compiled with and its init, whose body
 * follows (SELF is its disp_plugin *). Exported even under
 * -fvisibility=hidden. Once per plugin.
 */
#define DISP_PLUGIN(SELF)                                                         \
  DISP_PLUGIN_EXPORT extern const unsigned disp_plugin_abi_version;               \
  DISP_PLUGIN_EXPORT const unsigned disp_plugin_abi_version = DISP_ABI_VERSION;   \
  DISP_PLUGIN_EXPORT disp_status disp_plugin_init(disp_plugin *SELF);             \
  DISP_PLUGIN_EXPORT disp_status disp_plugin_init(disp_plugin *SELF)

/*
 * disp_plugin_load - loads the plugin at `path` (as dlopen finds it),
 * checks it, runs its static blocks and its init (Note [Plugin entry
 * point]). On success *out receives a handle the library owns, valid until
 * disp_shutdown() (after disp_plugin_unload too, for its name and path);
 * loading the same path again after an unload returns that same handle,
 * so load/unload cycles hold memory bounded.
 * Errors, each leaving the registry, allocators and device names as they
 * were, with "plugin '<name>' (<path>): <cause>":
 *   DISP_ERR_PLUGIN  not a shared object or no such file (dlerror()'s text),
 *                    a missing entry symbol, an ABI version mismatch, a
 *                    second copy of libdispatch in the plugin, a static block
 *                    that failed, init returning an error (its message
 *                    follows), the same file already loaded;
 *   DISP_ERR_DUPLICATE  this copy of libdispatch refuses (Note [A second
 *                    copy]); DISP_ERR_NO_MEMORY.
 * The plugin's name is the file name without directory, "lib" prefix and
 * extension ("build/libopenreg.so" -> "openreg"). Thread-safe: loads,
 * unloads and registrations are serialized.
 */
DISP_API disp_status disp_plugin_load(const char *path, disp_plugin **out);

/*
 * disp_plugin_unload - removes everything the plugin registered while it
 * loaded, newest first (Note [Plugin attribution]), then dlcloses it. The
 * handle stays valid (unloaded) until disp_shutdown(). Errors, changing
 * nothing: DISP_ERR_INVALID_ARG for NULL, a pointer that is no plugin handle
 * of this process, or a plugin already unloaded. Thread-safe with respect to
 * other loads and registrations; see the note for calls in flight.
 */
DISP_API disp_status disp_plugin_unload(disp_plugin *plugin);

/*
 * disp_plugin_find - the loaded plugin called `name` (disp_plugin_name), for
 * example one DISP_PLUGINS loaded. Borrowed handle. DISP_ERR_INVALID_ARG when
 * no loaded plugin has that name. Thread-safe.
 */
DISP_API disp_status disp_plugin_find(const char *name, disp_plugin **out);

/* disp_plugin_name / disp_plugin_path - the plugin's name and the path it
 * was loaded from; borrowed strings, valid as long as the handle. NULL for
 * NULL (with the message). Thread-safe. */
DISP_API const char *disp_plugin_name(const disp_plugin *plugin);
DISP_API const char *disp_plugin_path(const disp_plugin *plugin);

/* disp_plugin_is_loaded - 1 while loaded, 0 once unloaded (or for NULL).
 * Thread-safe. */
DISP_API int disp_plugin_is_loaded(const disp_plugin *plugin);

#ifdef __cplusplus
}
#endif

#endif /* DISP_PLUGIN_H */
