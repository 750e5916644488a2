/*
 * f32_map.c - float32 table kernels over strided iterator blocks
 * (f32_map.h).
 */
#include "f32_map.h"

enum { CHUNK = 256 }; /* floats per gathered piece: 1 KiB per operand on the stack */

static void gather(float *buf, const char *p, int64_t stride, int64_t m) {
  for (int64_t k = 0; k < m; k++) buf[k] = *(const float *)(p + k * stride);
}

static void scatter(char *p, int64_t stride, const float *buf, int64_t m) {
  for (int64_t k = 0; k < m; k++) *(float *)(p + k * stride) = buf[k];
}

void disp__f32_map1(char **d, const int64_t *s, int64_t n, disp__k_un_f32 f) {
  if (s[0] == 4 && s[1] == 4) {
    f((float *)d[0], (const float *)d[1], n);
    return;
  }
  float a[CHUNK];
  for (int64_t i = 0; i < n; i += CHUNK) {
    int64_t m = n - i < CHUNK ? n - i : CHUNK;
    gather(a, d[1] + i * s[1], s[1], m);
    f(a, a, m);
    scatter(d[0] + i * s[0], s[0], a, m);
  }
}

void disp__f32_map2(char **d, const int64_t *s, int64_t n,
                    void (*f)(float *o, const float *a, const float *b, int64_t n)) {
  if (s[0] == 4 && s[1] == 4 && s[2] == 4) {
    f((float *)d[0], (const float *)d[1], (const float *)d[2], n);
    return;
  }
  float a[CHUNK], b[CHUNK];
  for (int64_t i = 0; i < n; i += CHUNK) {
    int64_t m = n - i < CHUNK ? n - i : CHUNK;
    gather(a, d[1] + i * s[1], s[1], m);
    gather(b, d[2] + i * s[2], s[2], m);
    f(a, a, b, m);
    scatter(d[0] + i * s[0], s[0], a, m);
  }
}
