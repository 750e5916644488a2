/*
 * dispatch_table.c - define an operator library, register kernels, print
 * what the dispatcher will run for each key.
 *
 * <DESC> The main example until a model example exists: seed 002's myops
 * library (myadd with a CPU kernel, an Autograd fallthrough, a PrivateUse1
 * kernel from a "backend"), then its computed dispatch table and state. </DESC>
 */
#include <stdio.h>
#include <stdlib.h>

#include <disp.h>

/* Kernels for the table only; calling them arrives with the calls API. */
static disp_status myadd_cpu(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)op, (void)ks, (void)stack, (void)ud;
  return DISP_OK;
}
static disp_status myadd_privateuse1(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)op, (void)ks, (void)stack, (void)ud;
  return DISP_OK;
}

/* One DISP_LIBRARY block per namespace: the schemas. */
DISP_LIBRARY(myops, m) {
  disp_library_def(m, "myadd(Tensor self, Tensor other) -> Tensor", NULL);
  disp_library_def(m, "myadd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", NULL);
}

/* Kernels per key, in as many blocks as you like. */
DISP_LIBRARY_IMPL(myops, CPU, m) {
  disp_library_impl(m, "myadd", disp_kernel_boxed(myadd_cpu, NULL, NULL), NULL);
}

/* No autograd formula: say so with a fallthrough, which costs nothing. */
DISP_LIBRARY_IMPL(myops, AUTOGRAD, m) {
  disp_library_impl(m, "myadd", disp_kernel_fallthrough(), NULL);
}

static int print_op(const char *name) {
  const disp_op *op = NULL;
  if (disp_op_find(name, &op) != DISP_OK) {
    fprintf(stderr, "%s\n", disp_last_error());
    return 1;
  }
  char *state = disp_op_dump_state(op);
  char *table = disp_op_dump_table(op);
  printf("== state of %s\n%s\n== computed table of %s\n%s\n", name, state, name, table);
  free(state);
  free(table);
  return 0;
}

int main(void) {
  printf("libdispatch %s\n\n", disp_version_string());
  /* Static blocks run on first use; check that every one of them worked. */
  if (disp_registry_check() != DISP_OK) {
    fprintf(stderr, "registration failed:\n%s\n", disp_last_error());
    return 1;
  }
  if (print_op("myops::myadd")) return 1;

  /* A backend adds its kernel at run time (a plugin would do this on load). */
  disp_library *backend = NULL;
  if (disp_library_new(DISP_LIBRARY_IMPL, "myops", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &backend) != DISP_OK ||
      disp_library_impl(backend, "myadd", disp_kernel_boxed(myadd_privateuse1, NULL, NULL), NULL) != DISP_OK) {
    fprintf(stderr, "%s\n", disp_last_error());
    return 1;
  }
  printf("after a PrivateUse1 backend registered its kernel:\n");
  if (print_op("myops::myadd")) return 1;

  /* Mistakes are reported, and change nothing. */
  disp_library *again = NULL;
  if (disp_library_new(DISP_LIBRARY_DEF, "myops", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &again) != DISP_OK)
    printf("a second DISP_LIBRARY(myops) is refused:\n  %.120s...\n", disp_last_error());

  disp_library_free(backend);
  disp_shutdown();
  return 0;
}
