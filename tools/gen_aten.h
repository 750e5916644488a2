/*
 * gen_aten.h - what tools/gen_aten.c and the emitters compiled into it
 * (tools/gen_api.c) share: a manifest row (decl) and the macros the rows of
 * src/kernels/manifest.def are written with. Build time only.
 */
#ifndef GEN_ATEN_H
#define GEN_ATEN_H

#include <stdio.h>

#include "disp/schema.h"
#include "disp/stub.h"
#include "signature_internal.h"

#define DISP_K_CPU 1
#define DISP_K_META 2
#define DISP_K_CIA 4
#define DISP_K_CEA 8
#define DISP_K_CEANF 16
#define DISP_K_BSEL 32
#define DISP_K_ADIOV 64
#define DISP_K_AUTOCAST_CPU 128
#define DISP_K_AUTOCAST_CUDA 256
#define DISP_K_CPU_SCALAR 512
#define DISP_K_ANY_DEVICE 1024
#define DISP_K_CPU_SCALARS 2048
#define DISP_K_META_IS_CPU 4096

/* A row's derivative (manifest.def, .grad): none given, a formula, or
 * NOT_DIFFERENTIABLE. */
typedef struct grad_spec {
  const char *node, *inputs, *saved, *backward;
  int not_differentiable;
} grad_spec;

/* One manifest row; the fields are documented in manifest.def's header. */
typedef struct decl {
  const char *id;
  const char *schema;
  unsigned kernels;
  grad_spec grad;
  const char *nondiff_outputs;
  unsigned stub;
  const char *api; /* the concise function's name (disp_NAME), NULL for none */
} decl;

#define GRAD(NODE, INPUTS, SAVED, BACKWARD) {NODE, INPUTS, SAVED, #BACKWARD, 0}
#define NOT_DIFFERENTIABLE {NULL, NULL, NULL, NULL, 1}
#define STUB(X) (1u << DISP_STUB_##X)

/*
 * gen_api_write - writes the concise API of the rows with .api into OUTDIR:
 * disp/easy_ops.h (public: an options struct, a function and a macro per
 * row) and easy_ops.c (their bodies over the typed entries). Returns 0, or
 * 1 with the reason printed (a row whose arguments have no concise form, a
 * name used twice, an unwritable file). tools/gen_api.c.
 */
/* Opens OUTDIR/name for writing; NULL (with the reason printed) on failure
 * (gen_aten.c). */
FILE *open_output(const char *dir, const char *name);

int gen_api_write(const char *outdir, const decl *decls, int n, disp_schema *const *schemas,
                  disp_signature *const *sigs);

#endif
