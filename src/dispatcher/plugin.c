/*
 * plugin.c - loading, attributing and unloading backend plugins (Notes
 * [Plugin entry point] and [Plugin attribution] in disp/plugin.h).
 *
 * A load makes the plugin's owner current on the loading thread (Note
 * [Owners]) from dlopen to the end of init, so every module records how to
 * undo what the plugin changes; unloading, and a load that fails half way,
 * run those records newest first and only then dlclose, so the destroy
 * callbacks of its kernels still find their code. g_lock serializes loads
 * and unloads with each other; each registration takes the registry lock as
 * usual, so a load's registrations interleave safely with other threads'
 * (which the thread-local owner does not attribute to the plugin).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "disp/plugin.h"
#include "error_internal.h"
#include "library_internal.h"
#include "owner_internal.h"
#include "plugin_internal.h"
#include "single_copy_internal.h"
#include "strbuf_internal.h"

struct disp_plugin {
  char *name;
  char *path;
  void *handle;       /* dlopen's; NULL once unloaded */
  disp_owner *owner;  /* what it registered */
  struct disp_plugin *next; /* every handle of this lifetime, newest first */
};

/* Recursive: a plugin's init may ask about plugins (disp_plugin_find). */
static pthread_mutex_t g_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static disp_plugin *g_plugins; /* guarded by g_lock */
static int g_autoloaded;       /* guarded by g_lock */
static _Thread_local int tls_loading;

/* "dir/libopenreg.so.1" -> "openreg": what a user calls the plugin. */
static char *name_of(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (!strncmp(base, "lib", 3) && base[3] && base[3] != '.') base += 3;
  size_t n = strcspn(base, ".");
  return disp__strndup(base, n ? n : strlen(base));
}

static void plugin_free(disp_plugin *p) {
  if (!p) return;
  disp__owner_free(p->owner);
  disp__free(p->name);
  disp__free(p->path);
  disp__free(p);
}

static disp_plugin *plugin_new(const char *path) {
  disp_plugin *p = disp__calloc(1, sizeof *p);
  if (!p) return NULL;
  p->path = disp__strdup(path);
  p->name = name_of(path);
  if (p->name) {
    disp_strbuf b;
    disp__strbuf_init(&b);
    disp__strbuf_appendf(&b, "plugin '%s'", p->name);
    p->owner = disp__owner_new(disp__strbuf_cstr(&b));
    disp__strbuf_free(&b);
  }
  if (!p->path || !p->name || !p->owner) {
    plugin_free(p);
    return NULL;
  }
  return p;
}

/* Puts "plugin 'name' (path): " in front of the current message. */
static void name_failure(const disp_plugin *p) {
  disp__error_prefix("plugin '%s' (%s): ", p->name, p->path);
}

/* Fails with "plugin 'name' (path): <cause>". */
static disp_status plugin_fail(const disp_plugin *p, disp_status st, const char *fmt, ...)
    DISP_PRINTF(3, 4);
static disp_status plugin_fail(const disp_plugin *p, disp_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  disp__vfail(st, fmt, ap);
  va_end(ap);
  name_failure(p);
  return st;
}

/* Precondition: g_lock held. */
static const disp_plugin *loaded_with(void *handle) {
  for (const disp_plugin *q = g_plugins; q; q = q->next)
    if (q->handle == handle) return q;
  return NULL;
}

/* Everything that can refuse a plugin before any of its code registers
 * anything: its constructors have only queued nodes so far. */
static disp_status check(const disp_plugin *p, void *h, int copies_before, disp_plugin_init_fn *init) {
  const disp_plugin *same = loaded_with(h);
  if (same)
    return plugin_fail(p, DISP_ERR_PLUGIN, "this file is already loaded, as plugin '%s' (%s)",
                       same->name, same->path);
  char other[256] = "";
  if (disp__single_copy_find_other(other, sizeof other) > copies_before)
    return plugin_fail(p, DISP_ERR_PLUGIN,
                       "it brings a second copy of libdispatch into the process (in %s), whose "
                       "registry the program never calls (Note [A second copy]); link the plugin "
                       "against the shared libdispatch only",
                       other);
  *(void **)init = dlsym(h, DISP_PLUGIN_INIT_SYMBOL);
  if (!*init)
    return plugin_fail(p, DISP_ERR_PLUGIN,
                       "missing entry point %s; define it with DISP_PLUGIN(self) from disp/plugin.h",
                       DISP_PLUGIN_INIT_SYMBOL);
  if (!disp__plugin_symbol_is_function(*(void **)init))
    return plugin_fail(p, DISP_ERR_PLUGIN,
                       "its %s is not a function (a data object has that name); define the entry point "
                       "with DISP_PLUGIN(self) from disp/plugin.h",
                       DISP_PLUGIN_INIT_SYMBOL);
  const unsigned *abi = dlsym(h, DISP_PLUGIN_ABI_SYMBOL);
  if (!abi)
    return plugin_fail(p, DISP_ERR_PLUGIN,
                       "missing %s, the libdispatch ABI version it was built for; define the entry "
                       "point with DISP_PLUGIN(self) from disp/plugin.h",
                       DISP_PLUGIN_ABI_SYMBOL);
  if (*abi != disp_abi_version())
    return plugin_fail(p, DISP_ERR_PLUGIN,
                       "ABI version mismatch: the plugin was built for libdispatch ABI version %u, "
                       "this library (%s) has ABI version %u; rebuild the plugin against this "
                       "library's headers",
                       *abi, disp_version_string(), disp_abi_version());
  return DISP_OK;
}

/* Runs init; its failure names the plugin and keeps init's own message.
 * DISP_ERR_PLUGIN, or DISP_ERR_NO_MEMORY when init ran out of memory. */
static disp_status run_init(const disp_plugin *p, disp_plugin_init_fn init) {
  disp_clear_error();
  disp_status st = init((disp_plugin *)p);
  if (st == DISP_OK) return DISP_OK;
  if (!disp_last_error()[0]) disp__fail(DISP_ERR_PLUGIN, "(it set no message)");
  disp__error_prefix("%s failed with %s: ", DISP_PLUGIN_INIT_SYMBOL, disp_status_name(st));
  name_failure(p);
  return st == DISP_ERR_NO_MEMORY ? st : DISP_ERR_PLUGIN; /* out of memory is no fault of the plugin */
}

/* Undoes what the plugin did and dlcloses it, keeping the failure's message
 * (the undo actions run library code that may overwrite it). */
static disp_status roll_back(disp_plugin *p, void *h, disp_status st) {
  char *msg = disp__strdup(disp_last_error());
  disp__owner_undo_all(p->owner);
  dlclose(h);
  if (msg) disp__fail(st, "%s", msg);
  disp__free(msg);
  return st;
}

/* Precondition: g_lock held; p's owner current. */
static disp_status load_locked(disp_plugin *p) {
  char cause[160];
  if (disp__plugin_file_check(p->path, cause, sizeof cause) != 0)
    return plugin_fail(p, DISP_ERR_PLUGIN, "%s", cause);
  char ignored[8];
  int copies_before = disp__single_copy_find_other(ignored, sizeof ignored);
  disp__library_load_begin();
  dlerror();
  void *h = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
  /* The plugin's static blocks, queued by its constructors: run only once it
   * is accepted, forgotten otherwise (they live in its memory). */
  disp_library_node *nodes = disp__library_load_take();
  if (!h) {
    const char *why = dlerror();
    disp__library_load_end();
    return plugin_fail(p, DISP_ERR_PLUGIN, "%s", why ? why : "dlopen failed");
  }
  disp_plugin_init_fn init = NULL;
  disp_status st = check(p, h, copies_before, &init);
  if (st == DISP_OK && (st = disp__library_load_run(nodes)) != DISP_OK) name_failure(p);
  disp__library_load_end();
  if (st == DISP_OK) st = run_init(p, init);
  if (st != DISP_OK) return roll_back(p, h, st);
  p->handle = h;
  return DISP_OK;
}

/* Precondition: g_lock held. An unloaded handle of this path, or NULL. */
static disp_plugin *unloaded_handle(const char *path) {
  for (disp_plugin *q = g_plugins; q; q = q->next)
    if (!q->handle && !strcmp(q->path, path)) return q;
  return NULL;
}

disp_status disp_plugin_load(const char *path, disp_plugin **out) {
  DISP_REFUSE_NULL(path);
  DISP_REFUSE_NULL(out);
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  if (tls_loading)
    return disp__fail(DISP_ERR_PLUGIN,
                      "plugin (%s): disp_plugin_load was called while another plugin loads (from "
                      "its init or a static block); load plugins one after the other",
                      path);
  pthread_mutex_lock(&g_lock);
  /* Handles live until disp_shutdown (a program may ask an unloaded one its
   * name), so a file loaded again gets its old handle back: load/unload
   * cycles hold memory bounded (issue 18). */
  disp_plugin *p = unloaded_handle(path), *fresh = NULL;
  if (!p && !(p = fresh = plugin_new(path))) {
    pthread_mutex_unlock(&g_lock);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory loading plugin %s", path);
  }
  tls_loading = 1;
  disp_owner *prev = disp__owner_swap(p->owner);
  disp_status st = load_locked(p);
  disp__owner_swap(prev);
  tls_loading = 0;
  if (st == DISP_OK && fresh) {
    p->next = g_plugins;
    g_plugins = p;
  }
  pthread_mutex_unlock(&g_lock);
  if (st != DISP_OK) {
    plugin_free(fresh);
    return st;
  }
  *out = p;
  return DISP_OK;
}

/* Precondition: g_lock held, p loaded. */
static void unload_locked(disp_plugin *p) {
  disp__owner_undo_all(p->owner);
  dlclose(p->handle);
  p->handle = NULL;
}

/* Precondition: g_lock held. */
static int known(const disp_plugin *p) {
  for (const disp_plugin *q = g_plugins; q; q = q->next)
    if (q == p) return 1;
  return 0;
}

disp_status disp_plugin_unload(disp_plugin *plugin) {
  DISP_REFUSE_NULL(plugin);
  if (tls_loading)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_plugin_unload: called while a plugin loads (from its init or a static "
                      "block)");
  pthread_mutex_lock(&g_lock);
  disp_status st = DISP_OK;
  if (!known(plugin))
    st = disp__fail(DISP_ERR_INVALID_ARG,
                    "disp_plugin_unload: %p is not a plugin handle from disp_plugin_load (or it "
                    "was freed by disp_shutdown)",
                    (void *)plugin);
  else if (!plugin->handle)
    st = plugin_fail(plugin, DISP_ERR_INVALID_ARG,
                     "disp_plugin_unload: the plugin is not loaded; it was unloaded already");
  else
    unload_locked(plugin);
  pthread_mutex_unlock(&g_lock);
  return st;
}

disp_status disp_plugin_find(const char *name, disp_plugin **out) {
  DISP_REFUSE_NULL(name);
  DISP_REFUSE_NULL(out);
  pthread_mutex_lock(&g_lock);
  disp_plugin *found = NULL;
  for (disp_plugin *q = g_plugins; q && !found; q = q->next)
    if (q->handle && !strcmp(q->name, name)) found = q;
  pthread_mutex_unlock(&g_lock);
  if (!found) return disp__fail(DISP_ERR_INVALID_ARG, "disp_plugin_find: no plugin '%s' is loaded", name);
  *out = found;
  return DISP_OK;
}

const char *disp_plugin_name(const disp_plugin *plugin) {
  DISP_REFUSE_NULL_PTR(plugin);
  return plugin->name;
}

const char *disp_plugin_path(const disp_plugin *plugin) {
  DISP_REFUSE_NULL_PTR(plugin);
  return plugin->path;
}

int disp_plugin_is_loaded(const disp_plugin *plugin) {
  if (!plugin) return 0;
  pthread_mutex_lock(&g_lock);
  int loaded = plugin->handle != NULL;
  pthread_mutex_unlock(&g_lock);
  return loaded;
}

/* ---- the dispatcher's lifecycle ----------------------------------------- */

/* One entry of DISP_PLUGINS; the first failure's message is kept in *first. */
static void autoload_one(const char *path, disp_status *first_st, char **first) {
  disp_plugin *p = NULL;
  disp_status st = disp_plugin_load(path, &p);
  if (st == DISP_OK) return;
  disp__warn("DISP_PLUGINS: %s", disp_last_error());
  if (!*first) {
    *first = disp__strdup(disp_last_error());
    *first_st = st;
  }
}

void disp__plugins_autoload(void) {
  if (tls_loading) return; /* disp_init() from a plugin's init: later */
  const char *env = getenv("DISP_PLUGINS");
  pthread_mutex_lock(&g_lock);
  int done = g_autoloaded;
  g_autoloaded = 1;
  pthread_mutex_unlock(&g_lock);
  if (done || !env || !env[0]) return;
  char *list = disp__strdup(env);
  if (!list) {
    disp__fail(DISP_ERR_NO_MEMORY, "out of memory reading DISP_PLUGINS");
    return;
  }
  disp_status first_st = DISP_OK;
  char *first = NULL, *save = NULL;
  for (char *path = strtok_r(list, ":", &save); path; path = strtok_r(NULL, ":", &save))
    autoload_one(path, &first_st, &first);
  disp__free(list);
  if (first) disp__fail(first_st, "DISP_PLUGINS: %s", first);
  disp__free(first);
}

void disp__plugins_shutdown(void) {
  pthread_mutex_lock(&g_lock);
  for (disp_plugin *p = g_plugins; p; p = p->next)
    if (p->handle) unload_locked(p);
  while (g_plugins) {
    disp_plugin *p = g_plugins;
    g_plugins = p->next;
    plugin_free(p);
  }
  g_autoloaded = 0;
  pthread_mutex_unlock(&g_lock);
}
