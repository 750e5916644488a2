/*
 * device.c - device type names, PrivateUse1 renaming, device strings.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "argcheck_internal.h"
#include "owner_internal.h"
#include "strbuf_internal.h"
#include "tensor_internal.h"

/* PyTorch's lower-case DeviceType names, in disp_backend order. */
static const char *const type_names[DISP_NUM_BACKENDS] = {
    [DISP_BACKEND_CPU] = "cpu",
    [DISP_BACKEND_CUDA] = "cuda",
    [DISP_BACKEND_HIP] = "hip",
    [DISP_BACKEND_XLA] = "xla",
    [DISP_BACKEND_MPS] = "mps",
    [DISP_BACKEND_IPU] = "ipu",
    [DISP_BACKEND_XPU] = "xpu",
    [DISP_BACKEND_HPU] = "hpu",
    [DISP_BACKEND_VE] = "ve",
    [DISP_BACKEND_LAZY] = "lazy",
    [DISP_BACKEND_META] = "meta",
    [DISP_BACKEND_PRIVATEUSE1] = "privateuseone",
    [DISP_BACKEND_PRIVATEUSE2] = "privateusetwo",
    [DISP_BACKEND_PRIVATEUSE3] = "privateusethree",
};

#define NAME_MAX_LEN 31
#define NUM_CUSTOM 3 /* PrivateUse1..3 may be renamed */

/* The names of PrivateUse1..3 (slot = type - PrivateUse1): each written once
 * under the mutex into its buffer, then published by a release store;
 * readers acquire-load the pointer, and a buffer never changes while
 * published, so they need no lock. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char name_buf[NUM_CUSTOM][NAME_MAX_LEN + 1];
static _Atomic(const char *) custom_name[NUM_CUSTOM];
static disp_owner *name_owner[NUM_CUSTOM]; /* the plugin that set it (Note [Owners]), or NULL */

static int custom_slot(disp_backend type) {
  int slot = (int)type - DISP_BACKEND_PRIVATEUSE1;
  return slot >= 0 && slot < NUM_CUSTOM ? slot : -1;
}

/* The plugin that named the backend is unloaded: the name is free again. */
static void unname(void *ctx) {
  int slot = (int)(intptr_t)ctx;
  pthread_mutex_lock(&names_lock);
  atomic_store_explicit(&custom_name[slot], NULL, memory_order_release);
  name_owner[slot] = NULL;
  pthread_mutex_unlock(&names_lock);
}

static const char *custom_current(int slot) {
  return atomic_load_explicit(&custom_name[slot], memory_order_acquire);
}

const char *disp_device_type_name(disp_backend type) {
  if (!disp__device_type_valid(type)) return "unknown";
  int slot = custom_slot(type);
  const char *n = slot >= 0 ? custom_current(slot) : NULL;
  return n ? n : type_names[type];
}

/* What PyTorch calls the renaming, for messages. */
static const char *rename_fn(int slot) {
  static const char *const fns[NUM_CUSTOM] = {"rename_privateuse1_backend", "rename_privateuse2_backend",
                                              "rename_privateuse3_backend"};
  return fns[slot];
}

/* A device name a rename may take: [a-z][a-z_]*, no other type's. */
static disp_status check_name(int slot, const char *name, size_t len) {
  if (!name[0]) return disp__fail(DISP_ERR_INVALID_ARG, "%s: the name must not be empty", rename_fn(slot));
  int ok = len <= NAME_MAX_LEN && name[0] >= 'a' && name[0] <= 'z';
  for (size_t i = 0; ok && i < len; i++) ok = (name[i] >= 'a' && name[i] <= 'z') || name[i] == '_';
  if (!ok)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s: invalid name '%s' (expected 1 to %d characters of a-z and _, starting with a letter)",
                      rename_fn(slot), name, NAME_MAX_LEN);
  for (int t = 0; t < DISP_NUM_BACKENDS; t++) {
    int other = custom_slot((disp_backend)t);
    const char *taken = other >= 0 && other != slot ? custom_current(other) : NULL;
    if (t != DISP_BACKEND_PRIVATEUSE1 + slot && (!strcmp(name, type_names[t]) || (taken && !strcmp(name, taken))))
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: '%s' is already the name of device type %s", rename_fn(slot),
                        name, disp_backend_name((disp_backend)t));
  }
  return DISP_OK;
}

disp_status disp_device_rename_backend(disp_backend type, const char *name) {
  DISP_REFUSE_NULL(name);
  int slot = custom_slot(type);
  if (slot < 0)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_device_rename_backend: only PrivateUse1, PrivateUse2 and PrivateUse3 can be renamed, "
                      "not %s",
                      disp__device_type_valid(type) ? disp_backend_name(type) : "an invalid device type");
  size_t len = strlen(name);
  disp_status s = check_name(slot, name, len);
  if (s != DISP_OK) return s;
  disp_owner *me = disp__owner_current();
  pthread_mutex_lock(&names_lock);
  const char *cur = atomic_load_explicit(&custom_name[slot], memory_order_relaxed);
  if (cur && name_owner[slot] && name_owner[slot] != me) {
    s = disp__fail(DISP_ERR_DUPLICATE, "%s: the device name '%s' is already taken by %s, which renamed %s",
                   rename_fn(slot), cur, disp__owner_name(name_owner[slot]), disp_backend_name(type));
  } else if (!cur && (s = disp__owner_defer(unname, (void *)(intptr_t)slot, NULL)) == DISP_OK) {
    memcpy(name_buf[slot], name, len + 1);
    atomic_store_explicit(&custom_name[slot], name_buf[slot], memory_order_release);
    name_owner[slot] = me;
  } else if (cur && strcmp(cur, name)) {
    s = disp__fail(DISP_ERR_DUPLICATE,
                   "torch.register_privateuse%d_backend() has already been set! Current backend: %s", slot + 1,
                   cur);
  }
  pthread_mutex_unlock(&names_lock);
  return s;
}

disp_status disp_device_rename_privateuse1(const char *name) {
  DISP_REFUSE_NULL(name);
  return disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE1, name);
}

disp_status disp_device_validate(disp_device dev) {
  if (!disp__device_type_valid(dev.type))
    return disp__fail(DISP_ERR_INVALID_ARG, "invalid device type %d", (int)dev.type);
  if (dev.index < -1)
    return disp__fail(DISP_ERR_INVALID_ARG, "Device index must be -1 or non-negative, got %d",
                      (int)dev.index);
  if (dev.type == DISP_BACKEND_CPU && dev.index > 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "CPU device index must be -1 or zero, got %d",
                      (int)dev.index);
  return DISP_OK;
}

size_t disp_device_format(disp_device dev, char *buf, size_t size) {
  if (!buf) size = 0; /* measured, not written (Note [NULL arguments]) */
  const char *name = disp_device_type_name(dev.type);
  int n = dev.index >= 0 ? snprintf(buf, size, "%s:%d", name, (int)dev.index)
                         : snprintf(buf, size, "%s", name);
  return n < 0 ? 0 : (size_t)n;
}

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

disp_status disp_device_parse(const char *str, disp_device *out) {
  DISP_REFUSE_NULL(str);
  DISP_REFUSE_NULL(out);
  if (!str[0]) return disp__fail(DISP_ERR_INVALID_ARG, "Device string must not be empty");
  /* The grammar of PyTorch's Device(string): ([a-zA-Z_]+)(?::([1-9]\d*|0))? */
  size_t name_len = 0;
  while (is_alpha(str[name_len]) || str[name_len] == '_') name_len++;
  const char *idx = NULL;
  int bad = name_len == 0;
  if (!bad && str[name_len] == ':') {
    idx = str + name_len + 1;
    size_t n = 0;
    while (is_digit(idx[n])) n++;
    bad = n == 0 || idx[n] != '\0' || (idx[0] == '0' && n > 1);
  } else if (!bad) {
    bad = str[name_len] != '\0';
  }
  if (bad) return disp__fail(DISP_ERR_INVALID_ARG, "Invalid device string: '%s'", str);

  long index = -1;
  if (idx) {
    index = 0;
    for (const char *p = idx; *p; p++) {
      index = index * 10 + (*p - '0');
      if (index > INT16_MAX)
        return disp__fail(DISP_ERR_INVALID_ARG,
                          "Could not parse device index '%s' in device string '%s'", idx, str);
    }
  }

  int type = -1;
  for (int t = 0; t < DISP_NUM_BACKENDS && type < 0; t++)
    if (strlen(type_names[t]) == name_len && !strncmp(str, type_names[t], name_len)) type = t;
  for (int slot = 0; slot < NUM_CUSTOM && type < 0; slot++) {
    const char *n = custom_current(slot);
    if (n && strlen(n) == name_len && !strncmp(str, n, name_len)) type = DISP_BACKEND_PRIVATEUSE1 + slot;
  }
  if (type < 0) {
    disp_strbuf b;
    disp__strbuf_init(&b);
    for (int t = 0; t < DISP_NUM_BACKENDS; t++)
      disp__strbuf_appendf(&b, "%s%s", t ? ", " : "", type_names[t]);
    for (int slot = 0; slot < NUM_CUSTOM; slot++)
      if (custom_current(slot)) disp__strbuf_appendf(&b, ", %s", custom_current(slot));
    disp_status s = disp__fail(DISP_ERR_INVALID_ARG,
                               "Expected one of %s device type at start of device string: %.*s",
                               disp__strbuf_cstr(&b), (int)name_len, str);
    disp__strbuf_free(&b);
    return s;
  }
  disp_device dev = disp_device_make((disp_backend)type, (int)index);
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  *out = dev;
  return DISP_OK;
}

disp_status disp__device_parse_ids(const char *str, int32_t *type, int32_t *index) {
  disp_device d;
  disp_status st = disp_device_parse(str, &d);
  if (st != DISP_OK) return st;
  *type = (int32_t)d.type;
  *index = d.index;
  return DISP_OK;
}
