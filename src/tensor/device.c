/*
 * device.c - device type names, PrivateUse1 renaming, device strings.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
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

#define PU1_NAME_MAX 31

/* The PrivateUse1 name: written once under the mutex into pu1_buf, then
 * published by a release store; readers acquire-load the pointer, and the
 * buffer never changes after that, so they need no lock. */
static pthread_mutex_t pu1_lock = PTHREAD_MUTEX_INITIALIZER;
static char pu1_buf[PU1_NAME_MAX + 1];
static _Atomic(const char *) pu1_name;
static disp_owner *pu1_owner; /* the plugin that set it (Note [Owners]), or NULL */

/* The plugin that named PrivateUse1 is unloaded: the name is free again. */
static void unname_pu1(void *ctx) {
  (void)ctx;
  pthread_mutex_lock(&pu1_lock);
  atomic_store_explicit(&pu1_name, NULL, memory_order_release);
  pu1_owner = NULL;
  pthread_mutex_unlock(&pu1_lock);
}

static const char *pu1_current(void) {
  return atomic_load_explicit(&pu1_name, memory_order_acquire);
}

const char *disp_device_type_name(disp_backend type) {
  if (!disp__device_type_valid(type)) return "unknown";
  if (type == DISP_BACKEND_PRIVATEUSE1) {
    const char *n = pu1_current();
    if (n) return n;
  }
  return type_names[type];
}

disp_status disp_device_rename_privateuse1(const char *name) {
  DISP_REFUSE_NULL(name);
  if (!name[0])
    return disp__fail(DISP_ERR_INVALID_ARG, "rename_privateuse1_backend: the name must not be empty");
  size_t len = strlen(name);
  int ok = len <= PU1_NAME_MAX && name[0] >= 'a' && name[0] <= 'z';
  for (size_t i = 0; ok && i < len; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || name[i] == '_';
  if (!ok)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "rename_privateuse1_backend: invalid name '%s' (expected 1 to %d characters "
                      "of a-z and _, starting with a letter)",
                      name, PU1_NAME_MAX);
  for (int t = 0; t < DISP_NUM_BACKENDS; t++)
    if (t != DISP_BACKEND_PRIVATEUSE1 && !strcmp(name, type_names[t]))
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "rename_privateuse1_backend: '%s' is already the name of device type %s",
                        name, disp_backend_name((disp_backend)t));
  disp_status s = DISP_OK;
  disp_owner *me = disp__owner_current();
  pthread_mutex_lock(&pu1_lock);
  const char *cur = atomic_load_explicit(&pu1_name, memory_order_relaxed);
  if (cur && pu1_owner && pu1_owner != me) {
    s = disp__fail(DISP_ERR_DUPLICATE,
                   "rename_privateuse1_backend: the device name '%s' is already taken by %s, which "
                   "renamed PrivateUse1",
                   cur, disp__owner_name(pu1_owner));
  } else if (!cur && (s = disp__owner_defer(unname_pu1, NULL, NULL)) == DISP_OK) {
    memcpy(pu1_buf, name, len + 1);
    atomic_store_explicit(&pu1_name, pu1_buf, memory_order_release);
    pu1_owner = me;
  } else if (cur && strcmp(cur, name)) {
    s = disp__fail(DISP_ERR_DUPLICATE,
                   "torch.register_privateuse1_backend() has already been set! Current backend: %s",
                   cur);
  }
  pthread_mutex_unlock(&pu1_lock);
  return s;
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
  const char *pu1 = pu1_current();
  if (type < 0 && pu1 && strlen(pu1) == name_len && !strncmp(str, pu1, name_len))
    type = DISP_BACKEND_PRIVATEUSE1;
  if (type < 0) {
    disp_strbuf b;
    disp__strbuf_init(&b);
    for (int t = 0; t < DISP_NUM_BACKENDS; t++)
      disp__strbuf_appendf(&b, "%s%s", t ? ", " : "", type_names[t]);
    if (pu1) disp__strbuf_appendf(&b, ", %s", pu1);
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
