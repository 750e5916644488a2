/*
 * conv.c - convolution, convolution_backward (CompositeExplicitAutograd) and
 * conv2d (CompositeImplicitAutograd): 1-, 2- and 3-D, any groups, stride,
 * padding, dilation, and transposed convolution.
 *
 * Everything is computed on a "regular" convolution X[N,Ci,in] * W[Co,Ci/G,k]
 * -> Y[N,Co,out] with three primitives, all im2col + GEMM per (sample, group):
 *   forward      Y  = W  @ cols(X)
 *   input grad   dX = col2im(W^T @ dY)
 *   weight grad  dW = sum_n dY @ cols(X)^T
 * A transposed convolution is the adjoint of a regular one with the same
 * weight, so its forward is the regular input grad, its input grad the
 * regular forward, and its weight grad the regular weight grad with the
 * roles of input and grad_output swapped. Spatial dims are padded to three
 * (leading 1s), so one im2col serves every rank. Samples of the forward
 * and input grad run on the library's threads, im2col/col2im split over
 * channels, the weight grad's products over rows (gemm.c); every element
 * is summed in the same order at any thread count. float32 tensors are
 * computed in float with sgemm, as 1.13's float32 kernels accumulate; every
 * other dtype in float64 (exact for bfloat16 products), rounded once. The
 * primitives are written once, in conv_prim.h, for both compute types.
 *
 * The kernels are explicit composites in PyTorch; here they compute on CPU
 * tensors and give shapes only on Meta tensors.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "conv_util.h"
#include "cpu/kernels.h"
#include "tensor/dtype_cast.h"
#include "gemm.h"
#include "parallel.h"
#include "tensor/checked_math_internal.h"

#define FAIL(...) disp_set_error(DISP_ERR_INVALID_ARG, __VA_ARGS__)

/* The regular-convolution geometry, spatial dims padded to 3. */
typedef struct geom {
  int sd;                 /* real spatial dims (1..3) */
  int64_t n, ci, co, g;   /* batch, regular input/output channels, groups */
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
} geom;

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* Least channels (samples) per thread: about DISP_GRAIN_SIZE elements. */
static int64_t work_grain(double per) {
  return per >= DISP_GRAIN_SIZE ? 1 : DISP_GRAIN_SIZE / (int64_t)(per > 1 ? per : 1) + 1;
}

static int64_t cols_grain(const geom *gm) { return work_grain((double)prod3(gm->k) * (double)prod3(gm->out)); }

enum { PRIM_FWD, PRIM_BWD_IN, PRIM_BWD_W };

/* conv_prim.h's row loops (add, fill) use GCC's vector extensions. */
#if defined(__GNUC__)
#define CONV_HAVE_VECTORS 1
#else
#define CONV_HAVE_VECTORS 0
#endif

/* a / b rounded up, for b > 0 and a of either sign */
static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

/* [*lo, *hi): the outputs ow of a row whose input column ow*s + off (off =
 * kw*d - p, the tap's offset) lies inside the input row. */
static void cols_span(const geom *gm, int64_t off, int64_t *lo, int64_t *hi) {
  int64_t l = ceil_div(-off, gm->s[2]), h = ceil_div(gm->in[2] - off, gm->s[2]);
  l = l < 0 ? 0 : l > gm->out[2] ? gm->out[2] : l;
  *lo = l, *hi = h < l ? l : h > gm->out[2] ? gm->out[2] : h;
}

/* Stride 1 in height and width and an output as wide as the input (the
 * "same" convolutions of CNNs): within a depth slice, the inside part of a
 * row of im2col's columns is then the input plane shifted by a constant,
 * so it moves as one block (conv_prim.h's CP(shift_copy), CP(shift_add)). */
static int same_width(const geom *gm) { return gm->s[1] == 1 && gm->s[2] == 1 && gm->out[2] == gm->in[2]; }

/* [*a, *b): the output rows oh whose input row oh - p + kh*d is inside
 * (stride 1). */
static void rows_span(const geom *gm, int64_t kh, int64_t *a, int64_t *b) {
  int64_t sh = kh * gm->d[1] - gm->p[1];
  int64_t l = -sh < 0 ? 0 : -sh > gm->out[1] ? gm->out[1] : -sh, h = gm->in[1] - sh;
  *a = l, *b = h < l ? l : h > gm->out[1] ? gm->out[1] : h;
}

/* Where tap (kh, kw) of a same_width convolution reads: output rows [a, b)
 * and columns [lo, hi) lie inside the input plane, and each output q of
 * the block [q0, q1) = [a*W + lo, (b-1)*W + hi) reads input q + shift
 * (the block also spans the padded columns between its rows); empty (and
 * the rest zero) when no output reads the input. */
typedef struct tap_span {
  int64_t a, b, lo, hi, q0, q1, shift;
  int empty;
} tap_span;

static tap_span same_tap(const geom *gm, int64_t kh, int64_t kw) {
  tap_span t = {0};
  int64_t W = gm->out[2], off = kw * gm->d[2] - gm->p[2];
  rows_span(gm, kh, &t.a, &t.b);
  cols_span(gm, off, &t.lo, &t.hi);
  t.empty = t.a >= t.b || t.lo >= t.hi;
  if (t.empty) return t; /* (the shift of a tap that reads nothing may not fit int64) */
  t.shift = (kh * gm->d[1] - gm->p[1]) * W + off;
  t.q0 = t.a * W + t.lo;
  t.q1 = (t.b - 1) * W + t.hi;
  return t;
}

/* The input depth slice read by output slice od at depth tap kd, or -1
 * when it is padding. */
static int64_t depth_in(const geom *gm, int64_t od, int64_t kd) {
  int64_t id = od * gm->s[0] - gm->p[0] + kd * gm->d[0];
  return id >= 0 && id < gm->in[0] ? id : -1;
}

/* The weight gradient's chunks of samples: about WGRAD_SAMPLES samples
 * each, at most WGRAD_CHUNKS of them and WGRAD_BYTES of partial sums (a
 * weight-sized buffer per chunk). A function of the shapes alone, never of
 * the thread count, so the sums' order is fixed; 1 means one serial sum
 * straight into dW. */
enum { WGRAD_SAMPLES = 8, WGRAD_CHUNKS = 16 };
#define WGRAD_BYTES ((double)(64 << 20))

static int64_t wgrad_chunks(const geom *gm, size_t elem) {
  double wbytes = (double)gm->co * (double)(gm->ci / gm->g) * (double)prod3(gm->k) * (double)elem;
  int64_t c = (gm->n + WGRAD_SAMPLES - 1) / WGRAD_SAMPLES;
  if (c > WGRAD_CHUNKS) c = WGRAD_CHUNKS;
  while (c > 1 && (double)c * wbytes > WGRAD_BYTES) c--;
  return c < 1 ? 1 : c;
}

/* Note [Small convolutions]: with few input channels x taps (ck, the
 * im2col columns' rows; a CNN's first layer has 1 x 3x3 = 9) OpenBLAS does
 * the weight gradient (n = ck) at half its speed on big products and the
 * forward (k = ck) no faster than a direct loop, after a separate pass
 * that sets the output to the bias. The kernel table's conv_small kernels
 * (cpu/conv_small.c; AVX2 and AVX-512) do both products on the columns,
 * the forward starting from the bias: on the CNN's first layer (batch 64,
 * 32 x 28x28 outputs, 1 thread) the forward went from ~710 to ~500 us,
 * the weight and bias gradients from ~1150 to ~700. Past ck = 16 BLAS
 * gains on the forward (at 16: 11.4 us there, 10.7 here, per sample).
 * The choice depends on ck and the capability only, never on the thread
 * count; the input gradient (k = the output channels) stays on BLAS. */
enum { CONV_SMALL_CK = 16 };

/* The table with the small-convolution kernels for ck rows of columns,
 * or NULL (BLAS). */
static const disp__cpu_kernel_table *small_conv(int64_t ck) {
  const disp__cpu_kernel_table *kt = disp__cpu_kernels();
  return ck <= CONV_SMALL_CK && kt->conv_small_forward_f32 ? kt : NULL;
}

/* The primitives, once per compute type: float for float32 tensors (as
 * 1.13's float32 kernels accumulate), double for every other dtype. */
#define CT float
#define CT_IS_FLOAT 1
#define CSFX _f32
#define CGEMM disp__gemm_f32
#include "conv_prim.h"
#define CT double
#define CSFX _f64
#define CGEMM disp__gemm_f64
#include "conv_prim.h"

/* The primitive in compute dtype ct: float for float32 tensors, else double. */
static disp_status run_prim_as(disp_dtype ct, int prim, const geom *gm, const void *a, const void *b, void *y,
                               const double *bias) {
  if (ct == DISP_DTYPE_FLOAT32) return run_prim_f32(prim, gm, a, b, y, bias);
  return run_prim_f64(prim, gm, a, b, y, bias);
}

static disp_dtype compute_dtype(const disp_tensor *input) {
  return disp__t_dtype(input) == DISP_DTYPE_FLOAT32 ? DISP_DTYPE_FLOAT32 : DISP_DTYPE_FLOAT64;
}

/* ---- parameters and shape checks (PyTorch's check_shape_forward) ------- */

typedef struct params {
  int sd;
  int64_t stride[3], padding[3], dilation[3], outpad[3];
  int transposed;
  int64_t groups;
} params;

static disp_status expand_param(const char *op, disp_int_list l, const char *name, int sd, int64_t *out) {
  if (l.len == 1) {
    for (int i = 0; i < sd; i++) out[i] = l.data[0];
    return DISP_OK;
  }
  if (l.len != (size_t)sd) {
    char buf[160];
    /* the message shows at most the first 16 values of a long list */
    disp__conv_format_list(buf, sizeof buf, l.data, l.len > 16 ? 16 : (int)l.len);
    return FAIL("%s: expected %s to be a single integer value or a list of %d values to match the "
                "convolution dimensions, but got %s=%s", op, name, sd, name, buf);
  }
  for (int i = 0; i < sd; i++) out[i] = l.data[i];
  return DISP_OK;
}

static disp_status make_params(const char *op, disp_tensor *input, disp_tensor *weight,
                               disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                               bool transposed, disp_int_list output_padding, int64_t groups,
                               params *pr) {
  int sd = disp__t_ndim(weight) - 2;
  if (sd < 1) return FAIL("%s: weight should have at least three dimensions", op);
  if (sd > 3)
    return FAIL("%s: only 1-D, 2-D and 3-D convolutions are supported, got a %d-D weight", op, disp__t_ndim(weight));
  pr->sd = sd;
  pr->transposed = transposed;
  pr->groups = groups;
  disp_status st = expand_param(op, stride, "stride", sd, pr->stride);
  if (st == DISP_OK) st = expand_param(op, padding, "padding", sd, pr->padding);
  if (st == DISP_OK) st = expand_param(op, dilation, "dilation", sd, pr->dilation);
  if (st == DISP_OK) st = expand_param(op, output_padding, "output_padding", sd, pr->outpad);
  if (st != DISP_OK) return st;
  if (groups <= 0) return FAIL("%s: non-positive groups is not supported", op);
  for (int i = 0; i < sd; i++) {
    if (pr->padding[i] < 0) return FAIL("%s: negative padding is not supported", op);
    if (pr->outpad[i] < 0) return FAIL("%s: negative output_padding is not supported", op);
    if (pr->stride[i] <= 0) return FAIL("%s: non-positive stride is not supported", op);
    if (pr->dilation[i] <= 0) return FAIL("%s: dilation should be greater than zero", op);
  }
  (void)input;
  return DISP_OK;
}

/* Validates shapes and computes the user-facing output sizes (N, C, spatial). */
static disp_status conv_shape(const char *op, disp_tensor *input, disp_tensor *weight,
                              disp_tensor *bias, const params *pr, int64_t *osz) {
  char ws[160], is[160], bs[160];
  disp__conv_format_list(ws, sizeof ws, disp__t_sizes(weight), disp__t_ndim(weight));
  disp__conv_format_list(is, sizeof is, disp__t_sizes(input), disp__t_ndim(input));
  int k = disp__t_ndim(input), sd = pr->sd;
  int64_t g = pr->groups;
  if (disp__t_ndim(weight) != k)
    return FAIL("%s: Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                "input of size %s instead", op, disp__t_ndim(weight), disp__t_ndim(weight), ws, k, is);
  if (disp__t_size(weight, 0) < g)
    return FAIL("%s: Given groups=%lld, expected weight to be at least %lld at dimension 0, but got "
                "weight of size %s instead", op, (long long)g, (long long)g, ws);
  if (disp__t_size(weight, 0) % g)
    return FAIL("%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                "weight of size %s instead", op, (long long)g, (long long)g, ws);
  if (bias) disp__conv_format_list(bs, sizeof bs, disp__t_sizes(bias), disp__t_ndim(bias));
  osz[0] = disp__t_size(input, 0);
  if (!pr->transposed) {
    if (disp__t_size(input, 1) != disp__t_size(weight, 1) * g)
      return FAIL("%s: Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but "
                  "got %lld channels instead", op, (long long)g, ws, is,
                  (long long)(disp__t_size(weight, 1) * g), (long long)disp__t_size(input, 1));
    if (bias && (disp__t_ndim(bias) != 1 || disp__t_size(bias, 0) != disp__t_size(weight, 0)))
      return FAIL("%s: Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but "
                  "got bias of size %s instead", op, ws, (long long)disp__t_size(weight, 0), bs);
    int bad = 0, too_big = 0;
    char pin[160] = "", pk[160] = "";
    size_t a = 0, b = 0;
    for (int i = 0; i < sd; i++) {
      /* exact: 1.13's int64 versions wrap for huge padding or dilation */
      disp__conv_i128 padded = (disp__conv_i128)disp__t_size(input, 2 + i) + 2 * (disp__conv_i128)pr->padding[i];
      disp__conv_i128 ks = (disp__conv_i128)pr->dilation[i] * (disp__t_size(weight, 2 + i) - 1) + 1;
      if (padded < ks) bad = 1;
      if (padded > INT64_MAX) too_big = 1;
      char v[48];
      disp__conv_format_i128(v, sizeof v, padded);
      a += (size_t)snprintf(pin + a, sizeof pin - a, "%s%s", i ? " x " : "", v);
      disp__conv_format_i128(v, sizeof v, ks);
      b += (size_t)snprintf(pk + b, sizeof pk - b, "%s%s", i ? " x " : "", v);
      if (a >= sizeof pin) a = sizeof pin - 1;
      if (b >= sizeof pk) b = sizeof pk - 1;
      osz[2 + i] = padded < ks || too_big ? 0 : (int64_t)((padded - ks) / pr->stride[i] + 1);
    }
    if (bad)
      return FAIL("%s: Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size "
                  "can't be greater than actual input size", op, pin, pk);
    /* the output would fit, but no input index could be computed in int64 */
    if (too_big)
      return FAIL("%s: Calculated padded input size per channel: (%s). Padded sizes past %lld are not "
                  "supported", op, pin, (long long)INT64_MAX);
    osz[1] = disp__t_size(weight, 0);
  } else {
    if (disp__t_size(input, 1) != disp__t_size(weight, 0))
      return FAIL("%s: Given transposed=1, weight of size %s, expected input%s to have %lld channels, but "
                  "got %lld channels instead", op, ws, is, (long long)disp__t_size(weight, 0),
                  (long long)disp__t_size(input, 1));
    if (bias && (disp__t_ndim(bias) != 1 || disp__t_size(bias, 0) != disp__t_size(weight, 1) * g))
      return FAIL("%s: Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %lld "
                  "elements, but got bias of size %s instead", op, ws, (long long)(disp__t_size(weight, 1) * g), bs);
    for (int i = 0; i < sd; i++) {
      if (pr->outpad[i] >= pr->stride[i] && pr->outpad[i] >= pr->dilation[i])
        return FAIL("%s: output padding must be smaller than either stride or dilation, but got "
                    "output_padding=%lld, stride=%lld, dilation=%lld", op, (long long)pr->outpad[i],
                    (long long)pr->stride[i], (long long)pr->dilation[i]);
      /* exact, as above: each product is below 2^126, the sum below 2^127 */
      disp__conv_i128 o = (disp__conv_i128)(disp__t_size(input, 2 + i) - 1) * pr->stride[i] -
                          2 * (disp__conv_i128)pr->padding[i] +
                          (disp__conv_i128)pr->dilation[i] * (disp__t_size(weight, 2 + i) - 1) + pr->outpad[i] + 1;
      char v[48];
      disp__conv_format_i128(v, sizeof v, o);
      if (o < 1)
        return FAIL("%s: Given input size per channel: %s. Calculated output size per channel is "
                    "non-positive (%s). Output size is too small", op, is, v);
      /* the regular convolution behind it pads this output */
      if (o + 2 * (disp__conv_i128)pr->padding[i] > INT64_MAX)
        return FAIL("%s: Given input size per channel: %s. Calculated output size per channel (%s) plus "
                    "padding is past %lld, which is not supported", op, is, v, (long long)INT64_MAX);
      osz[2 + i] = (int64_t)o;
    }
    osz[1] = disp__t_size(weight, 1) * g;
  }
  return DISP_OK;
}

/* The regular geometry behind a (possibly transposed) convolution whose
 * user-facing input/output sizes are isz/osz. */
static void make_geom(const params *pr, const int64_t *isz, const int64_t *osz, disp_tensor *weight, geom *gm) {
  const int64_t *rin = pr->transposed ? osz : isz, *rout = pr->transposed ? isz : osz;
  gm->sd = pr->sd;
  gm->n = isz[0];
  gm->ci = rin[1];
  gm->co = rout[1];
  gm->g = pr->groups;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - pr->sd);
    int real = j >= 0;
    gm->in[i] = real ? rin[2 + j] : 1;
    gm->out[i] = real ? rout[2 + j] : 1;
    gm->k[i] = real ? disp__t_size(weight, 2 + j) : 1;
    gm->s[i] = real ? pr->stride[j] : 1;
    gm->p[i] = real ? pr->padding[j] : 0;
    gm->d[i] = real ? pr->dilation[j] : 1;
  }
}

/* Note [convolution backends]: 1.13's _convolution picks a backend, and the
 * backend decides which dtypes work, which checks run and the result's
 * layout. On a CPU (and here on Meta, which mirrors it):
 * - Empty: zero batch or zero input channels. No kernel runs: the result
 *   is input * weight.view(-1)[0] (+ bias[0]) viewed to the output size, so
 *   any dtypes combine by type promotion, and a weight that cannot be
 *   viewed flat is an error.
 * - Mkldnn: float32 convolutions big enough by use_mkldnn()'s rules, and
 *   every bfloat16 one (1.13 on an AVX-512 machine). Weight and bias must
 *   have the input's dtype.
 * - the slow im2col kernels otherwise: any dtype but float16 and bool; the
 *   weight must have the input's dtype, the bias is converted (the
 *   transposed kernels want the input's dtype there too).
 * Outputs are channels_last when the input or the weight suggests it,
 * except for transposed convolutions (contiguous). A bfloat16 transposed
 * convolution is computed as a transposed one here: 1.13 sends it through
 * Mkldnn, which silently computes a regular convolution. */
typedef enum conv_backend { BK_EMPTY, BK_MKLDNN, BK_SLOW } conv_backend;

/* 1.13's ConvParams::use_mkldnn at one thread, for 2-D and 3-D inputs. */
static int use_mkldnn(const disp_tensor *input, const disp_tensor *weight, const params *pr) {
  if (disp__t_dtype(input) == DISP_DTYPE_BFLOAT16) return !pr->transposed;
  if (disp__t_dtype(input) != DISP_DTYPE_FLOAT32 || pr->transposed) return 0;
  int strided = 0, dilated = 0;
  for (int i = 0; i < pr->sd; i++) {
    strided |= pr->stride[i] != 1;
    dilated |= pr->dilation[i] != 1;
  }
  /* sizes as 1.13 sees them: a 1-D convolution is viewed as (N, C, 1, L) */
  int64_t kw = disp__t_size(weight, disp__t_ndim(weight) - 1),
          kh = pr->sd == 1 ? 1 : disp__t_size(weight, disp__t_ndim(weight) - 2);
  int64_t n = disp__t_size(input, 0), c = disp__t_size(input, 1);
  int64_t h = pr->sd == 1 ? 1 : disp__t_size(input, 2),
          w = pr->sd == 1 ? disp__t_size(input, 2) : disp__t_size(input, 3);
  int worth = strided || dilated || n >= 16 || kw != 1 || kh != 1;
  return worth && (pr->groups > 1 || (kw > 3 && kh > 3) || n > 1 || n * c * h * w > 20480);
}

static disp_status select_backend(const char *op, disp_tensor *input, disp_tensor *weight, const params *pr,
                                  conv_backend *bk) {
  if (disp__t_size(input, 0) == 0 || disp__t_size(input, 1) == 0) {
    *bk = BK_EMPTY;
    return DISP_OK;
  }
  if (disp__t_numel(input) == 0) {
    char is[160];
    disp__conv_format_list(is, sizeof is, disp__t_sizes(input), disp__t_ndim(input));
    return FAIL("%s: Only zero batch or zero channel inputs are supported, but got input shape: %s", op, is);
  }
  *bk = use_mkldnn(input, weight, pr) ? BK_MKLDNN : BK_SLOW;
  return DISP_OK;
}

static disp_status check_types(const char *op, conv_backend bk, int transposed, disp_tensor *input,
                               disp_tensor *weight, disp_tensor *bias) {
  disp_dtype dt = disp__t_dtype(input);
  const char *tn = disp_dtype_torch_name(dt);
  if (bk == BK_MKLDNN) {
    if (disp__t_dtype(weight) != dt)
      return FAIL(
          "%s: Input type (CPU%sType) and weight type (CPU%sType) should be the same or input should "
          "be a MKLDNN tensor and weight is a dense tensor",
          op, tn, disp_dtype_torch_name(disp__t_dtype(weight)));
    if (bias && disp__t_dtype(bias) != dt)
      return FAIL("%s: Input type (CPU%sType) and bias type (CPU%sType) should be the same or input should "
                  "be a MKLDNN tensor and bias is a dense tensor", op, tn, disp_dtype_torch_name(disp__t_dtype(bias)));
    return DISP_OK;
  }
  if (dt == DISP_DTYPE_FLOAT16 || dt == DISP_DTYPE_BOOL || dt == DISP_DTYPE_QUINT8)
    return FAIL("%s: \"slow_conv2d_cpu\" not implemented for '%s'", op, tn);
  if (disp__t_dtype(weight) != dt)
    return FAIL("%s: expected scalar type %s but found %s", op, tn, disp_dtype_torch_name(disp__t_dtype(weight)));
  /* the transposed kernels read the bias as the input's element type */
  if (transposed && bias && disp__t_dtype(bias) != dt)
    return FAIL("%s: expected scalar type %s but found %s", op, tn, disp_dtype_torch_name(disp__t_dtype(bias)));
  return DISP_OK;
}

/* Whether the result is channels_last (4-D only). */
static int out_channels_last(const disp_tensor *input, const disp_tensor *weight, const params *pr) {
  if (disp__t_ndim(input) != 4 || pr->transposed) return 0;
  return disp__conv_channels_last(input) || disp__conv_channels_last(weight);
}

/* The Empty backend's forward (see the note). */
static disp_status conv_empty_forward(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                                      const int64_t *osz, disp_tensor **out) {
  static const int64_t flat[1] = {-1};
  disp_int_list fl = {flat, 1}, os = {osz, (size_t)disp__t_ndim(input)};
  disp_tensor *wv = NULL, *a = NULL, *b = NULL, *y = NULL, *r = NULL, *same = NULL;
  disp_status st = disp_aten_view(weight, fl, &wv);
  if (st == DISP_OK && disp__t_size(input, 1) == 0) {
    st = disp_aten_view(input, fl, &a);
    if (st == DISP_OK) st = disp_aten_mul_Tensor(a, wv, &y);
  } else if (st == DISP_OK) {
    st = disp_aten_select_int(wv, 0, 0, &b);
    if (st == DISP_OK) st = disp_aten_mul_Tensor(input, b, &y);
  }
  disp_tensor_release(a);
  disp_tensor_release(b);
  b = NULL;
  if (st == DISP_OK && bias) {
    st = disp_aten_select_int(bias, 0, 0, &b);
    if (st == DISP_OK) st = disp_aten_add__Tensor(y, b, disp_scalar_int(1), &same);
    disp_tensor_release(same);
  }
  if (st == DISP_OK) st = disp_aten_view(y, os, &r);
  disp_tensor_release(b);
  disp_tensor_release(wv);
  disp_tensor_release(y);
  if (st == DISP_OK) *out = r;
  return st;
}

static int is_meta(const disp_tensor *t) { return disp__t_device_type(t) == DISP_BACKEND_META; }

static disp_status check_device(const char *op, disp_tensor *input) {
  if (disp__t_device_type(input) == DISP_BACKEND_CPU || is_meta(input)) return DISP_OK;
  return FAIL("%s: no convolution kernel for device type %s: register one for the backend",
              op, disp_device_type_name(disp__t_device_type(input)));
}

disp_status disp__cea_convolution(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                                  disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                                  bool transposed, disp_int_list output_padding, int64_t groups,
                                  disp_tensor **out0) {
  const char *op = "convolution";
  params pr;
  int64_t osz[5];
  disp_status st = make_params(op, input, weight, stride, padding, dilation, transposed,
                               output_padding, groups, &pr);
  if (st == DISP_OK) st = conv_shape(op, input, weight, bias, &pr, osz);
  if (st == DISP_OK) st = check_device(op, input);
  conv_backend bk = BK_SLOW;
  if (st == DISP_OK) st = select_backend(op, input, weight, &pr, &bk);
  if (st != DISP_OK) return st;
  if (bk == BK_EMPTY) {
    if (disp__t_size(input, 1) == 0) osz[1] = 0; /* 1.13's calc_output_size */
    return conv_empty_forward(input, weight, bias, osz, out0);
  }
  if ((st = check_types(op, bk, pr.transposed, input, weight, bias)) != DISP_OK) return st;
  int cl = out_channels_last(input, weight, &pr);
  disp_tensor *out;
  if ((st = disp__conv_empty(osz, disp__t_ndim(input), disp__t_dtype(input), disp__t_device(input), cl, &out)) !=
      DISP_OK)
    return st;
  if (is_meta(input) || disp__t_numel(out) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  geom gm;
  make_geom(&pr, disp__t_sizes(input), osz, weight, &gm);
  disp_dtype ct = compute_dtype(input);
  void *xo = NULL, *wo = NULL, *yo = NULL;
  const void *x = disp__conv_view_as(input, ct, &xo), *w = disp__conv_view_as(weight, ct, &wo);
  void *y = disp__conv_out_as(out, ct, &yo);
  double *bv = NULL;
  if (!x || !w || !y || (bias && !(bv = disp__malloc(sizeof(double) * (size_t)(osz[1] + 1))))) {
    st = disp_set_error(DISP_ERR_NO_MEMORY, "convolution: out of memory");
  } else {
    /* the bias is first converted to the result's dtype (the slow kernels
     * copy it into the output, then accumulate onto it) */
    for (int64_t c = 0; bias && c < osz[1]; c++) {
      char cv[16];
      disp__convert_elem(cv, disp__t_dtype(out), (char *)disp_tensor_data_ptr(bias) + c * disp__t_stride(bias, 0) *
                         (int64_t)disp_dtype_itemsize(disp__t_dtype(bias)), disp__t_dtype(bias));
      bv[c] = disp__load_f64(cv, disp__t_dtype(out));
    }
    st = run_prim_as(ct, transposed ? PRIM_BWD_IN : PRIM_FWD, &gm, x, w, y, bv);
  }
  disp__free(bv);
  disp__conv_out_done(out, yo, ct, st == DISP_OK);
  disp__free(xo), disp__free(wo);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

/* The Empty backend's backward: zero gradients shaped (and laid out) like
 * input and weight, a zero bias gradient of the weight's dtype; grad_output
 * is not looked at. */
static disp_status conv_empty_backward(disp_tensor *input, disp_tensor *weight, disp_opt_int_list bias_sizes,
                                       disp_bool_list output_mask, disp_tensor **out0, disp_tensor **out1,
                                       disp_tensor **out2) {
  disp_opt_device nodev = {0};
  disp_opt_bool nopin = {0};
  disp_tensor *gi = NULL, *gw = NULL, *gb = NULL;
  disp_status st = DISP_OK;
  if (output_mask.data[0]) st = disp_aten_zeros_like(input, -1, -1, nodev, nopin, -1, &gi);
  if (st == DISP_OK && output_mask.data[1]) st = disp_aten_zeros_like(weight, -1, -1, nodev, nopin, -1, &gw);
  if (st == DISP_OK && output_mask.data[2]) {
    if (!bias_sizes.has_value) {
      st = FAIL("convolution_backward: bias_sizes must be given when output_mask[2] is set");
    } else {
      disp_opt_device dev = {(int32_t)disp__t_device_type(weight), (int32_t)disp__t_device_index(weight), true};
      disp_int_list bs = bias_sizes.value;
      st = disp_aten_zeros(bs, disp__t_dtype(weight), -1, dev, nopin, &gb);
    }
  }
  if (st != DISP_OK) {
    disp_tensor_release(gi), disp_tensor_release(gw), disp_tensor_release(gb);
    return st;
  }
  *out0 = gi, *out1 = gw, *out2 = gb;
  return DISP_OK;
}

/* One gradient of convolution_backward: primitive prim of a and b into t. */
static disp_status backward_one(const char *op, disp_tensor *t, disp_dtype ct, int prim, const geom *gm,
                                const void *a, const void *b) {
  void *ro = NULL, *r = disp__conv_out_as(t, ct, &ro);
  disp_status st = r ? run_prim_as(ct, prim, gm, a, b, r, NULL) : disp_set_error(DISP_ERR_NO_MEMORY, "%s: out of memory", op);
  disp__conv_out_done(t, ro, ct, st == DISP_OK);
  return st;
}

/* The bias gradient into gb: dy (n x c x sp) summed over samples and
 * spatial positions. */
static disp_status backward_bias(const char *op, disp_tensor *gb, disp_dtype ct, const void *dy, int64_t n,
                                 int64_t c, int64_t sp) {
  void *ro = NULL, *r = disp__conv_out_as(gb, ct, &ro);
  if (!r) return disp_set_error(DISP_ERR_NO_MEMORY, "%s: out of memory", op);
  if (ct == DISP_DTYPE_FLOAT32) sum_bias_f32(r, dy, n, c, sp);
  else sum_bias_f64(r, dy, n, c, sp);
  disp__conv_out_done(gb, ro, ct, 1);
  return DISP_OK;
}

disp_status disp__cea_convolution_backward(disp_tensor *grad_output, disp_tensor *input, disp_tensor *weight,
                                           disp_opt_int_list bias_sizes, disp_int_list stride,
                                           disp_int_list padding, disp_int_list dilation, bool transposed,
                                           disp_int_list output_padding, int64_t groups,
                                           disp_bool_list output_mask, disp_tensor **out0,
                                           disp_tensor **out1, disp_tensor **out2) {
  const char *op = "convolution_backward";
  params pr;
  int64_t osz[5];
  if (output_mask.len != 3) return FAIL("%s: output_mask must have 3 elements", op);
  disp_status st = make_params(op, input, weight, stride, padding, dilation, transposed,
                               output_padding, groups, &pr);
  if (st == DISP_OK) st = conv_shape(op, input, weight, NULL, &pr, osz);
  /* 1.13 checks this in backward only; the forward ignores the argument */
  for (int i = 0; st == DISP_OK && !pr.transposed && i < pr.sd; i++)
    if (pr.outpad[i]) {
      char buf[96];
      disp__conv_format_list(buf, sizeof buf, output_padding.data,
                             output_padding.len > 16 ? 16 : (int)output_padding.len);
      st = FAIL("%s: output_padding is not supported for non-transposed convolutions; got: %s", op, buf);
    }
  if (st == DISP_OK && disp__t_ndim(grad_output) != disp__t_ndim(input))
    st = FAIL("%s: Expected input and grad_output to have the same number of dimensions, but got: %d and %d", op,
              disp__t_ndim(input), disp__t_ndim(grad_output));
  if (st == DISP_OK) st = check_device(op, input);
  conv_backend bk = BK_SLOW;
  if (st == DISP_OK) st = select_backend(op, input, weight, &pr, &bk);
  if (st != DISP_OK) return st;
  if (bk == BK_EMPTY) return conv_empty_backward(input, weight, bias_sizes, output_mask, out0, out1, out2);
  /* only grad_input reads the weight; grad_weight has the input's dtype */
  if ((st = check_types(op, bk, pr.transposed, input, output_mask.data[0] ? weight : input, NULL)) != DISP_OK)
    return st;
  if (disp__t_dtype(grad_output) != disp__t_dtype(input))
    return FAIL("%s: expected scalar type %s but found %s", op, disp_dtype_torch_name(disp__t_dtype(input)),
                disp_dtype_torch_name(disp__t_dtype(grad_output)));
  int same = disp__t_ndim(grad_output) == disp__t_ndim(input);
  for (int i = 0; same && i < disp__t_ndim(input); i++) same = disp__t_size(grad_output, i) == osz[i];
  if (!same) {
    char gs[160], es[160];
    disp__conv_format_list(gs, sizeof gs, disp__t_sizes(grad_output), disp__t_ndim(grad_output));
    disp__conv_format_list(es, sizeof es, osz, disp__t_ndim(input));
    return FAIL("%s: Expected grad_output of size %s, but got %s", op, es, gs);
  }
  int cl = out_channels_last(input, weight, &pr);
  disp_tensor *gi = NULL, *gw = NULL, *gb = NULL;
  if (output_mask.data[0])
    st = disp__conv_empty(disp__t_sizes(input), disp__t_ndim(input), disp__t_dtype(input), disp__t_device(input), cl,
                          &gi);
  if (st == DISP_OK && output_mask.data[1])
    st = disp__conv_empty(disp__t_sizes(weight), disp__t_ndim(weight), disp__t_dtype(input), disp__t_device(weight), cl,
                          &gw);
  if (st == DISP_OK && output_mask.data[2])
    st = disp__conv_empty(&osz[1], 1, disp__t_dtype(grad_output), disp__t_device(grad_output), 0, &gb);
  if (st == DISP_OK && !is_meta(input)) {
    geom gm;
    make_geom(&pr, disp__t_sizes(input), osz, weight, &gm);
    disp_dtype ct = compute_dtype(input);
    void *xo = NULL, *wo = NULL, *dyo = NULL;
    const void *x = disp__conv_view_as(input, ct, &xo), *w = disp__conv_view_as(weight, ct, &wo);
    const void *dy = disp__conv_view_as(grad_output, ct, &dyo);
    if (!x || !w || !dy) st = disp_set_error(DISP_ERR_NO_MEMORY, "%s: out of memory", op);
    if (st == DISP_OK && gi)
      st = backward_one(op, gi, ct, transposed ? PRIM_FWD : PRIM_BWD_IN, &gm, dy, w);
    if (st == DISP_OK && gw)
      st = transposed ? backward_one(op, gw, ct, PRIM_BWD_W, &gm, dy, x) : backward_one(op, gw, ct, PRIM_BWD_W, &gm, x, dy);
    if (st == DISP_OK && gb) {
      int64_t c = osz[1], sp = disp__t_numel(grad_output) / (osz[0] * c > 0 ? osz[0] * c : 1);
      st = backward_bias(op, gb, ct, dy, osz[0], c, sp);
    }
    disp__free(xo), disp__free(wo), disp__free(dyo);
  }
  if (st != DISP_OK) {
    disp_tensor_release(gi), disp_tensor_release(gw), disp_tensor_release(gb);
    return st;
  }
  *out0 = gi, *out1 = gw, *out2 = gb;
  return DISP_OK;
}

/* The C++ type names 1.13's conv2d prints for dtypes (TypeMeta::name). */
static const char *cpp_type_name(disp_dtype dt) {
  switch (dt) {
    case DISP_DTYPE_FLOAT32: return "float";
    case DISP_DTYPE_FLOAT64: return "double";
    case DISP_DTYPE_FLOAT16: return "c10::Half";
    case DISP_DTYPE_BFLOAT16: return "c10::BFloat16";
    case DISP_DTYPE_INT64: return "long int";
    case DISP_DTYPE_INT32: return "int";
    case DISP_DTYPE_INT16: return "short int";
    case DISP_DTYPE_INT8: return "signed char";
    case DISP_DTYPE_UINT8: return "unsigned char";
    case DISP_DTYPE_BOOL: return "bool";
    default: return disp_dtype_torch_name(dt);
  }
}

/* conv2d: 3-D (unbatched) or 4-D input, through convolution. Unlike
 * convolution itself, 1.13's conv2d insists on a bias of the input's dtype. */
disp_status disp__cia_conv2d(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                             disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                             int64_t groups, disp_tensor **out0) {
  if (bias && disp__t_dtype(bias) != disp__t_dtype(input))
    return FAIL("conv2d: Input type (%s) and bias type (%s) should be the same", cpp_type_name(disp__t_dtype(input)),
                cpp_type_name(disp__t_dtype(bias)));
  if (disp__t_ndim(input) != 3 && disp__t_ndim(input) != 4) {
    char is[160];
    disp__conv_format_list(is, sizeof is, disp__t_sizes(input), disp__t_ndim(input));
    return FAIL("conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: %s", is);
  }
  static const int64_t zeros[2] = {0, 0};
  disp_int_list outpad = {zeros, 2};
  if (disp__t_ndim(input) == 4)
    return disp_aten_convolution(input, weight, bias, stride, padding, dilation, false, outpad, groups, out0);
  disp_tensor *x = NULL, *y = NULL;
  disp_status st = disp_aten_unsqueeze(input, 0, &x);
  if (st == DISP_OK) st = disp_aten_convolution(x, weight, bias, stride, padding, dilation, false, outpad, groups, &y);
  disp_tensor_release(x);
  if (st != DISP_OK) return st;
  st = disp_aten_squeeze_dim(y, 0, out0);
  disp_tensor_release(y);
  return st;
}
