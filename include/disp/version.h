/*
 * disp/version.h - compile-time and run-time version of libdispatch.
 * Nothing here takes a pointer (status.h's Note [NULL arguments]).
 */
#ifndef DISP_VERSION_H
#define DISP_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DISP_VERSION_MAJOR 0
#define DISP_VERSION_MINOR 1
#define DISP_VERSION_PATCH 0
/* 0xMMmmpp: comparable with < and >. */
#define DISP_VERSION_HEX \
  ((DISP_VERSION_MAJOR << 16) | (DISP_VERSION_MINOR << 8) | DISP_VERSION_PATCH)
#define DISP_VERSION_STRING "0.1.0"

/*
 * Note [ABI version]
 * DISP_ABI_VERSION numbers the binary interface a plugin is compiled
 * against, apart from the release version: what a plugin's machine code
 * assumes about the library beyond function names. Bump it (by one) in the
 * same commit whenever
 *   - a public struct a caller allocates, embeds or reads changes layout
 *     (disp_library_node, disp_kernel, disp_allocator, disp_value,
 *     disp_fast_table, the list and optional structs of value.h, ...),
 *   - an inline function or macro of a public header starts reading
 *     something else (the call path of call.h: disp_fast_tls, DISP_CALL),
 *   - an exported function changes its signature or meaning,
 *   - an enum that crosses the interface is renumbered (keys, dtypes,
 *     statuses, devices).
 * Adding a new function or a new enum value at the end does not need a bump.
 * disp_plugin_load() refuses a plugin whose disp_plugin_abi_version differs
 * from disp_abi_version() before any of its registrations run (plugin.h).
 */
#define DISP_ABI_VERSION 1

/*
 * disp_version - DISP_VERSION_HEX of the library actually loaded (which may
 * differ from the headers a program was compiled with). Thread-safe.
 */
DISP_API unsigned disp_version(void);

/* disp_version_string - "MAJOR.MINOR.PATCH" of the loaded library. Static. */
DISP_API const char *disp_version_string(void);

/*
 * disp_abi_version - DISP_ABI_VERSION of the library actually loaded (Note
 * [ABI version]); a plugin or program compiled with another value must not
 * use it. Thread-safe.
 */
DISP_API unsigned disp_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_VERSION_H */
