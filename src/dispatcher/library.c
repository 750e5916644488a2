/*
 * library.c - libraries: groups of registrations that come and go together
 * (DISP_LIBRARY blocks, a plugin's, or opened at run time), and their
 * namespace claims. The static registration queue and the dispatcher's
 * lifecycle are in lifecycle.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ffi.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "library_internal.h"
#include "owner_internal.h"
#include "reclaim_internal.h"
#include "registry_internal.h"
#include "schema_internal.h"
#include "single_copy_internal.h"
#include "strbuf_internal.h"

struct disp_library {
  disp_library_kind kind;
  char *ns;
  disp_key key;
  char *debug;                 /* "registered at FILE:LINE" */
  disp_registration *regs;     /* newest first */
  disp_namespace_claim *claim; /* DEF libraries */
  unsigned generation;         /* the dispatcher lifetime it belongs to */
  disp_undo *undo;             /* its plugin's record (Note [Owners]), or NULL */
};


static unsigned g_generation = 1;

void disp__library_new_generation(void) { g_generation++; }

/* ---- libraries ---------------------------------------------------------- */

/* A plugin's library, freed when the plugin is unloaded (Note [Owners]). */
static void library_undo(void *ctx) {
  disp_library *lib = ctx;
  lib->undo = NULL; /* the record is running: nothing to cancel */
  disp_library_free(lib);
}

const char *disp__library_kind_macro(disp_library_kind kind) {
  switch (kind) {
    case DISP_LIBRARY_DEF: return "DISP_LIBRARY";
    case DISP_LIBRARY_FRAGMENT: return "DISP_LIBRARY_FRAGMENT";
    case DISP_LIBRARY_IMPL: break;
  }
  return "DISP_LIBRARY_IMPL";
}

/* A namespace is a C/Python identifier, as PyTorch's schema parser reads
 * the `ns` of `ns::op`; anything else could never be used in a def or impl
 * (and "x::y" would silently name another namespace). */
static int is_identifier(const char *s) {
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (const char *p = s + 1; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}

static disp_status check_namespace(disp_library_kind kind, const char *ns) {
  static const char rule[] =
      "a namespace must be a valid identifier (a letter or '_', then letters, digits or '_')";
  if (!ns) return disp__fail(DISP_ERR_INVALID_ARG, "%s: the namespace is NULL; %s", disp__library_kind_macro(kind), rule);
  if (!is_identifier(ns))
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: invalid namespace \"%s\"; %s", disp__library_kind_macro(kind), ns, rule);
  return DISP_OK;
}

disp_status disp_library_new(disp_library_kind kind, const char *ns, disp_key key,
                             const char *file, int line, disp_library **out) {
  DISP_REFUSE_NULL(ns);
  DISP_REFUSE_NULL(out);
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  if ((unsigned)kind > DISP_LIBRARY_IMPL)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_new: invalid library kind %d", (int)kind);
  if ((unsigned)key >= DISP_KEY_COUNT)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_new: invalid dispatch key %d", (int)key);
  if (check_namespace(kind, ns) != DISP_OK) return DISP_ERR_INVALID_ARG;
  if (kind == DISP_LIBRARY_IMPL && key != DISP_KEY_UNDEFINED && !disp_key_is_alias(key) &&
      disp_key_table_index(key) <= 0)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s(%s, %s): %s is not a runtime or alias dispatch key", disp__library_kind_macro(kind), ns,
                      disp_key_name(key), disp_key_name(key));
  if (kind != DISP_LIBRARY_IMPL && strcmp(ns, "_") == 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: the namespace \"_\" is only for %s",
                      disp__library_kind_macro(kind), disp__library_kind_macro(DISP_LIBRARY_IMPL));
  disp_library *lib = disp__calloc(1, sizeof *lib);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "registered at %s:%d", file ? file : "<unknown>", line);
  if (!lib || !(lib->ns = disp__strdup(ns)) || !(lib->debug = disp__strbuf_steal(&b))) goto oom;
  lib->kind = kind;
  lib->key = key;
  /* Note [Plugin attribution]: recorded first, so running out of memory
   * here fails with nothing claimed. */
  if (disp__owner_defer(library_undo, lib, &lib->undo) != DISP_OK) {
    disp__free(lib->ns);
    disp__free(lib->debug);
    disp__free(lib);
    return DISP_ERR_NO_MEMORY;
  }

  disp__lock();
  lib->generation = g_generation;
  if (kind == DISP_LIBRARY_DEF) {
    disp_namespace_claim *c = NULL;
    HASH_FIND_STR(disp__registry.namespaces, ns, c);
    if (c) {
      disp_status st = disp__fail(
          DISP_ERR_DUPLICATE,
          "Only a single TORCH_LIBRARY can be used to register the namespace %s; please put all "
          "of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify "
          "implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you "
          "really intended to define operators for a single namespace in a distributed way, you "
          "can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of "
          "TORCH_LIBRARY was %s; latest registration was %s",
          ns, c->debug, lib->debug);
      disp__unlock();
      disp__owner_cancel(lib->undo);
      disp__free(lib->ns);
      disp__free(lib->debug);
      disp__free(lib);
      return st;
    }
    c = disp__calloc(1, sizeof *c);
    if (c && (c->ns = disp__strdup(ns)) && (c->debug = disp__strdup(lib->debug)))
      HASH_ADD_KEYPTR(hh, disp__registry.namespaces, c->ns, strlen(c->ns), c);
    if (!c || !DISP_HASH_ADDED(c)) {
      if (c) disp__free(c->ns), disp__free(c->debug);
      disp__free(c);
      disp__unlock();
      disp__owner_cancel(lib->undo);
      goto oom;
    }
    lib->claim = c;
  }
  disp__unlock();
  *out = lib;
  return DISP_OK;
oom:
  disp__strbuf_free(&b);
  if (lib) {
    disp__free(lib->ns);
    disp__free(lib->debug);
  }
  disp__free(lib);
  return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a library for %s", ns);
}

void disp_library_free(disp_library *lib) {
  if (!lib) return;
  disp__owner_cancel(lib->undo);
  disp__lock();
  int live = lib->generation == g_generation;
  for (disp_registration *r = lib->regs; r; r = r->next)
    if (live) disp__registration_remove_locked(r);
  if (live && lib->claim) {
    HASH_DEL(disp__registry.namespaces, lib->claim);
    disp__free(lib->claim->ns);
    disp__free(lib->claim->debug);
    disp__free(lib->claim);
  }
  disp__unlock();
  while (lib->regs) {
    disp_registration *r = lib->regs;
    lib->regs = r->next;
    disp__registration_free(r);
  }
  disp__free(lib->ns);
  disp__free(lib->debug);
  disp__free(lib);
}

const char *disp_library_namespace(const disp_library *lib) {
  DISP_REFUSE_NULL_PTR(lib);
  return lib->ns;
}

disp_key disp_library_key(const disp_library *lib) { return lib ? lib->key : DISP_KEY_UNDEFINED; }

static void keep(disp_library *lib, disp_registration *reg, disp_registration **out) {
  reg->next = lib->regs;
  lib->regs = reg;
  if (out) *out = reg;
}

static const char *lib_ns(const disp_library *lib) {
  return strcmp(lib->ns, "_") == 0 ? NULL : lib->ns;
}

static disp_status library_def(disp_library *lib, const char *schema, disp_fn adapter,
                               disp_registration **out) {
  if (!lib || !schema) return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_def: NULL argument");
  if (lib->kind == DISP_LIBRARY_IMPL)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "def(\"%s\") is not allowed in a %s block; put definitions in DISP_LIBRARY "
                      "or DISP_LIBRARY_FRAGMENT (%s)",
                      schema, disp__library_kind_macro(lib->kind), lib->debug);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_def(lib->ns, schema, lib->debug, adapter, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

disp_status disp_library_def(disp_library *lib, const char *schema, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(schema);
  return library_def(lib, schema, NULL, out);
}

disp_status disp__library_def_builtin(disp_library *lib, const char *schema, disp_fn adapter) {
  return library_def(lib, schema, adapter, NULL);
}

disp_status disp_library_impl_key(disp_library *lib, const char *name, disp_key key,
                                  disp_kernel kernel, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(name);
  if ((unsigned)key >= DISP_KEY_COUNT)
    return disp__fail(DISP_ERR_INVALID_ARG, "impl(\"%s\"): invalid dispatch key %d", name, (int)key);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_impl(lib_ns(lib), name, key, &kernel, lib->debug, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

disp_status disp_library_impl(disp_library *lib, const char *name, disp_kernel kernel,
                              disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(name);
  /* PyTorch registers an impl without a dispatch key (in a TORCH_LIBRARY
   * block) as CompositeImplicitAutograd. */
  disp_key key = lib->kind == DISP_LIBRARY_IMPL && lib->key != DISP_KEY_UNDEFINED
                     ? lib->key
                     : DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD;
  return disp_library_impl_key(lib, name, key, kernel, out);
}

disp_status disp_library_fallback(disp_library *lib, disp_kernel kernel, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  if (lib->kind != DISP_LIBRARY_IMPL || lib->key == DISP_KEY_UNDEFINED)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "fallback() needs a DISP_LIBRARY_IMPL block with a dispatch key (%s)",
                      lib->debug);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_fallback(lib->key, &kernel, lib->debug, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

