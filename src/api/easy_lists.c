/*
 * easy_lists.c - concise forms of operators with a Tensor[] result
 * (disp/easy.h): each piece becomes a concise result of the current scope.
 */
#include "easy_internal.h"
#include "error_internal.h"

/* Owns every piece of v into the current scope, writing them to out (room
 * for n): the piece count, or -1 with the error set (v is freed either way). */
static int own_pieces(const char *fn, disp_tensor_vec *v, disp_tensor **out, int n) {
  int count = (int)v->len;
  if (v->len > (size_t)n) {
    disp__fail(DISP_ERR_INVALID_ARG, "%s: %zu pieces do not fit in the %d given", fn, v->len, n);
    disp__easy_failed();
    count = -1;
  }
  for (size_t i = 0; count >= 0 && i < v->len; i++)
    if (!(out[i] = disp__easy_own(disp_tensor_retain(v->data[i])))) count = -1;
  if (count < 0)
    for (int i = 0; i < n; i++) out[i] = NULL;
  disp_tensor_vec_free(v);
  return count;
}

int disp_split(disp_tensor *t, int64_t size, int64_t dim, disp_tensor **out, int n) {
  if (!out || n < 0) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_split: out is NULL or n (%d) is negative", n);
    return disp__easy_failed(), -1;
  }
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (!t) return disp__easy_null("disp_split", "t"), -1;
  disp_tensor_vec v = {NULL, 0};
  if (disp_aten_split_Tensor(t, size, dim, &v) != DISP_OK) return disp__easy_call_failed("disp_split"), -1;
  return own_pieces("disp_split", &v, out, n);
}
