/*
 * plugin_file.c - the checks a plugin file gets before any of its code runs
 * (issue 18, class 2): a file that is not a well-formed shared object is
 * refused with its path and the cause, instead of crashing inside dlopen
 * (a truncated .so is mapped, then SIGBUS) or calling data as a function.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_internal.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#endif
#define HOST_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

static int refuse(char *why, size_t len, const char *cause) {
  snprintf(why, len, "%s", cause);
  return -1;
}

/* Reads exactly n bytes at off; 0 on success. */
static int read_at(int fd, void *buf, size_t n, off_t off) {
  return pread(fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

/* The ELF header and program headers against the file's size. */
static int check_elf(int fd, off_t size, char *why, size_t len) {
  ElfW(Ehdr) eh;
  if (size < (off_t)sizeof eh || read_at(fd, &eh, sizeof eh, 0))
    return refuse(why, len, "not an ELF shared object (the file is shorter than an ELF header)");
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG)) return refuse(why, len, "not an ELF shared object (no ELF magic)");
  if (eh.e_ident[EI_CLASS] != HOST_CLASS)
    return refuse(why, len, "an ELF object of another class (32/64-bit) than this process");
#ifdef HOST_MACHINE
  if (eh.e_machine != HOST_MACHINE) return refuse(why, len, "an ELF object for another machine architecture");
#endif
  if (eh.e_type != ET_DYN) return refuse(why, len, "an ELF file that is not a shared object (ET_DYN)");
  if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
      (off_t)eh.e_phoff + (off_t)eh.e_phnum * (off_t)sizeof(ElfW(Phdr)) > size)
    return refuse(why, len, "truncated or corrupt: its program headers lie past the end of the file");
  if (eh.e_shnum && (off_t)eh.e_shoff + (off_t)eh.e_shnum * (off_t)eh.e_shentsize > size)
    return refuse(why, len, "truncated: its section headers lie past the end of the file");
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    if (read_at(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)))
      return refuse(why, len, "truncated: a program header cannot be read");
    if (ph.p_type == PT_LOAD && (off_t)ph.p_offset + (off_t)ph.p_filesz > size)
      return refuse(why, len, "truncated: a loadable segment lies past the end of the file");
  }
  return 0;
}

int disp__plugin_file_check(const char *path, char *why, size_t why_len) {
  if (!path[0]) return refuse(why, why_len, "the path is empty");
  /* A bare name is dlopen's to search for (LD_LIBRARY_PATH, the cache). */
  if (!strchr(path, '/')) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_len, "%s: cannot open shared object file: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  int rc;
  if (fstat(fd, &st) != 0) rc = refuse(why, why_len, "cannot stat the file");
  else if (S_ISDIR(st.st_mode)) rc = refuse(why, why_len, "it is a directory, not a shared object");
  else if (!S_ISREG(st.st_mode)) rc = refuse(why, why_len, "not a regular file");
  else rc = check_elf(fd, st.st_size, why, why_len);
  close(fd);
  return rc;
}

int disp__plugin_symbol_is_function(void *addr) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return 0;
  int type = ELF64_ST_TYPE(sym->st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC;
}
