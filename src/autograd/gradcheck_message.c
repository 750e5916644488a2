/*
 * gradcheck_message.c - the text of a Jacobian mismatch, with the matrices
 * printed the way PyTorch prints a float64 tensor (4 decimals), shortened to
 * their corners so that a large Jacobian stays readable.
 */
#include "error_internal.h"
#include "gradcheck_internal.h"
#include "strbuf_internal.h"

enum { EDGE = 3 }; /* rows and columns shown at each end of a long dimension */

/* The indices shown of a dimension of n: all, or the first and last EDGE
 * with a gap (-1) between. */
static int shown(int64_t n, int64_t *idx) {
  int k = 0;
  for (int64_t i = 0; i < n; i++) {
    if (n > 2 * EDGE && i == EDGE) {
      idx[k++] = -1;
      i = n - EDGE;
    }
    idx[k++] = i;
  }
  return k;
}

static void print_matrix(disp_strbuf *b, const double *m, int64_t rows, int64_t cols) {
  int64_t ri[2 * EDGE + 1], ci[2 * EDGE + 1];
  int nr = shown(rows, ri), nc = shown(cols, ci);
  if (!rows || !cols) {
    disp__strbuf_appendf(b, "tensor([], size=(%lld, %lld), dtype=torch.float64)", (long long)rows, (long long)cols);
    return;
  }
  disp__strbuf_append(b, "tensor([");
  for (int r = 0; r < nr; r++) {
    if (r) disp__strbuf_append(b, ",\n        ");
    if (ri[r] < 0) { disp__strbuf_append(b, "..."); continue; }
    disp__strbuf_appendc(b, '[');
    for (int c = 0; c < nc; c++) {
      if (c) disp__strbuf_append(b, ", ");
      if (ci[c] < 0) disp__strbuf_append(b, "...");
      else disp__strbuf_appendf(b, "%.4f", m[ri[r] * cols + ci[c]]);
    }
    disp__strbuf_appendc(b, ']');
  }
  disp__strbuf_append(b, "], dtype=torch.float64)");
}

disp_status disp__gc_mismatch(size_t output, size_t input, const double *numerical, const double *analytical,
                              int64_t rows, int64_t cols) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "Jacobian mismatch for output %zu with respect to input %zu,\nnumerical:", output, input);
  print_matrix(&b, numerical, rows, cols);
  disp__strbuf_append(&b, "\nanalytical:");
  print_matrix(&b, analytical, rows, cols);
  disp__strbuf_appendc(&b, '\n');
  disp_status st = disp__fail(DISP_ERR_MISMATCH, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return st;
}
