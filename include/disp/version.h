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
 * disp_version - DISP_VERSION_HEX of the library actually loaded (which may
 * differ from the headers a program was compiled with). Thread-safe.
 */
DISP_API unsigned disp_version(void);

/* disp_version_string - "MAJOR.MINOR.PATCH" of the loaded library. Static. */
DISP_API const char *disp_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_VERSION_H */
