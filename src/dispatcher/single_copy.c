/*
 * single_copy.c - one libdispatch per process.
 *
 * Note [A second copy]
 * A program that links libdispatch.a and loads a plugin linked against
 * libdispatch.so carries two registries: the plugin's registrations would go
 * to one the program never calls, silently. So each copy carries an ELF note
 * (.note.libdispatch, in a PT_NOTE segment of whatever object it is linked
 * into), and at its first initialisation a copy walks the notes of every
 * loaded object (dl_iterate_phdr). Finding one that is not its own, it
 * refuses: it registers no built-in operator, and every lookup and every
 * registration fails with the message below; nothing aborts. Notes rather
 * than a symbol: an executable exports nothing unless linked with -rdynamic,
 * so dlsym() cannot see a static copy; nor does the environment take part.
 * A copy checks once: one initialised before the other copy was loaded keeps
 * working, and the late one - the plugin's - is the one that fails.
 */
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "error_internal.h"
#include "registry_internal.h"
#include "single_copy_internal.h"

/* name size ("libdispatch" and its NUL), descriptor size, type, name. "%note"
 * rather than "@note": '@' starts a comment on some targets. */
__asm__(".pushsection .note.libdispatch,\"a\",%note\n"
        ".balign 4\n"
        ".globl disp__copy_note\n"
        ".hidden disp__copy_note\n"
        "disp__copy_note:\n"
        ".long 12\n.long 0\n.long 1\n"
        ".asciz \"libdispatch\"\n"
        ".popsection\n");
extern const char disp__copy_note[];

static atomic_int g_state; /* 0 not checked, 1 alone, 2 refusing */
static char g_message[1024]; /* holds the text and both names whole */

typedef struct copies {
  char own[256], other[256], last[256]; /* last: the newest other copy */
  int found_other;
} copies;

static void object_name(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s", name && name[0] ? name : "the program");
}

/* Every note of one PT_NOTE segment: header, name, descriptor, each padded
 * to the segment's alignment (4, or 8 for 8-aligned segments). */
static void scan_notes(const char *p, size_t size, size_t align, const char *object, copies *c) {
  const char *end = p + size;
  while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
    const ElfW(Nhdr) *nh = (const void *)p;
    size_t name = (nh->n_namesz + align - 1) & ~(align - 1);
    size_t desc = (nh->n_descsz + align - 1) & ~(align - 1);
    if (name + desc > (size_t)(end - p) - sizeof *nh) return; /* malformed: stop */
    if (nh->n_namesz == sizeof "libdispatch" && !memcmp(p + sizeof *nh, "libdispatch", sizeof "libdispatch")) {
      if (p == disp__copy_note) {
        object_name(c->own, sizeof c->own, object);
      } else {
        if (!c->found_other) object_name(c->other, sizeof c->other, object);
        object_name(c->last, sizeof c->last, object);
        c->found_other++;
      }
    }
    p += sizeof *nh + name + desc;
  }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_NOTE)
      scan_notes((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, ph->p_align == 8 ? 8 : 4,
                 info->dlpi_name, data);
  }
  return 0;
}

int disp__single_copy_find_other(char *where, size_t size) {
  copies c = {.own = "an unknown object"};
  dl_iterate_phdr(visit, &c);
  if (c.found_other) snprintf(where, size, "%s", c.last);
  return c.found_other;
}

void disp__single_copy_check(void) {
  if (atomic_load(&g_state)) return;
  copies c = {.own = "an unknown object"};
  dl_iterate_phdr(visit, &c);
  if (c.found_other)
    snprintf(g_message, sizeof g_message,
             "libdispatch: a second copy of the library was loaded into this process (static and shared?): "
             "this copy is in %s, another in %s; this one refuses every registration and call. "
             "Link the program and its plugins against one libdispatch, the shared library",
             c.own, c.other);
  atomic_store(&g_state, c.found_other ? 2 : 1);
}

int disp__is_second_copy(void) { return atomic_load(&g_state) == 2; }

disp_status disp__refuse_second_copy(void) {
  disp__ensure_init();
  if (!disp__is_second_copy()) return DISP_OK;
  return disp__fail(DISP_ERR_DUPLICATE, "%s", g_message);
}
