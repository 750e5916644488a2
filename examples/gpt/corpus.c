/*
 * corpus.c - reading the fortunes corpus into token streams (corpus.h).
 */
#define _DEFAULT_SOURCE /* lstat, DT_* */
#include "corpus.h"
#include "../splitmix64.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A growing byte buffer. */
typedef struct bytes {
  unsigned char *p;
  size_t len, cap;
} bytes;

static int bytes_add(bytes *b, const void *src, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->len, src, n);
  b->len += n;
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* The quote files of dir, sorted (corpus.h's rule). */
static disp_status list_files(const char *dir, char ***names, size_t *count) {
  DIR *d = opendir(dir);
  if (!d)
    return disp_set_error(DISP_ERR_IO, "corpus: cannot open %s (%s): install Debian's fortunes package or pass --data DIR",
                          dir, strerror(errno));
  char **v = NULL;
  size_t n = 0, cap = 0;
  disp_status st = DISP_OK;
  for (struct dirent *e; st == DISP_OK && (e = readdir(d)) != NULL;) {
    char path[4096];
    struct stat sb;
    if (strchr(e->d_name, '.')) continue; /* ".", "..", .dat, .u8 */
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (n == cap) {
      char **w = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof *v);
      if (!w) { st = disp_set_error(DISP_ERR_NO_MEMORY, "corpus: out of memory"); break; }
      v = w;
    }
    if ((v[n] = strdup(e->d_name)) == NULL) st = disp_set_error(DISP_ERR_NO_MEMORY, "corpus: out of memory");
    else n++;
  }
  closedir(d);
  if (st != DISP_OK) return free_names(v, n), st;
  if (n) qsort(v, n, sizeof *v, by_name);
  *names = v, *count = n;
  return DISP_OK;
}

static disp_status read_file(const char *path, bytes *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return disp_set_error(DISP_ERR_IO, "corpus: cannot open %s (%s)", path, strerror(errno));
  unsigned char buf[65536];
  size_t got;
  disp_status st = DISP_OK;
  while (st == DISP_OK && (got = fread(buf, 1, sizeof buf, f)) > 0)
    if (bytes_add(out, buf, got)) st = disp_set_error(DISP_ERR_NO_MEMORY, "corpus: out of memory");
  if (st == DISP_OK && ferror(f)) st = disp_set_error(DISP_ERR_IO, "corpus: cannot read %s", path);
  fclose(f);
  return st;
}

/* Appends text's quotes to the splits: each non-empty quote, then "%\n". */
static disp_status split_quotes(const bytes *text, bytes *split[2], size_t *quotes) {
  size_t start = 0;
  for (size_t i = 0; i <= text->len; i++) {
    int at_end = i == text->len;
    /* a separator: a line that is exactly "%" (or "%" ending the file) */
    int sep = !at_end && text->p[i] == '%' && (i == 0 || text->p[i - 1] == '\n') &&
              (i + 1 == text->len || text->p[i + 1] == '\n');
    if (!sep && !at_end) continue;
    if (i > start) {
      bytes *s = split[*quotes % 10 == 9];
      if (bytes_add(s, text->p + start, i - start) || bytes_add(s, "%\n", 2))
        return disp_set_error(DISP_ERR_NO_MEMORY, "corpus: out of memory");
      ++*quotes;
    }
    start = i + 2; /* past "%\n" */
  }
  return DISP_OK;
}

/* Bytes to token ids in place, building the vocabulary. */
static void tokenize(corpus *c, bytes *train, bytes *val) {
  int16_t id[256];
  int seen[256] = {0};
  for (size_t i = 0; i < train->len; i++) seen[train->p[i]] = 1;
  for (size_t i = 0; i < val->len; i++) seen[val->p[i]] = 1;
  c->vocab = 0;
  for (int b = 0; b < 256; b++)
    if (seen[b]) c->byte[c->vocab] = (unsigned char)b, id[b] = (int16_t)c->vocab++;
  for (size_t i = 0; i < train->len; i++) train->p[i] = (uint8_t)id[train->p[i]];
  for (size_t i = 0; i < val->len; i++) val->p[i] = (uint8_t)id[val->p[i]];
}

disp_status corpus_load(const char *dir, corpus *out) {
  if (!out) return disp_set_error(DISP_ERR_INVALID_ARG, "corpus_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!dir) dir = CORPUS_DEFAULT_DIR;
  char **names = NULL;
  size_t n = 0;
  disp_status st = list_files(dir, &names, &n);
  if (st != DISP_OK) return st;
  bytes train = {0}, val = {0}, text = {0}, *split[2] = {&train, &val};
  for (size_t i = 0; st == DISP_OK && i < n; i++) {
    char path[4096];
    text.len = 0;
    if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
      st = disp_set_error(DISP_ERR_INVALID_ARG, "corpus_load: path too long");
    if (st == DISP_OK) st = read_file(path, &text);
    if (st == DISP_OK) st = split_quotes(&text, split, &out->quotes);
  }
  free(text.p);
  free_names(names, n);
  if (st == DISP_OK && (train.len < 2 || val.len < 2))
    st = disp_set_error(DISP_ERR_IO, "corpus: %s holds too little text (%zu quotes in %zu files)", dir, out->quotes, n);
  if (st != DISP_OK) {
    free(train.p), free(val.p);
    memset(out, 0, sizeof *out);
    return st;
  }
  tokenize(out, &train, &val);
  out->train = train.p, out->ntrain = train.len;
  out->val = val.p, out->nval = val.len;
  out->files = n;
  return DISP_OK;
}

void corpus_free(corpus *c) {
  if (!c) return;
  free(c->train), free(c->val);
  memset(c, 0, sizeof *c);
}

uint64_t corpus_rng_below(uint64_t *state, uint64_t bound) { return splitmix64_below(state, bound); }

static disp_tensor *tokens_tensor(int64_t batch, int64_t context) {
  int64_t sizes[2] = {batch, context};
  disp_tensor *t = NULL;
  disp_device cpu = {DISP_BACKEND_CPU, -1};
  return disp_tensor_empty(sizes, 2, DISP_DTYPE_INT64, cpu, &t) == DISP_OK ? t : NULL;
}

disp_status corpus_batch(const corpus *c, int val, int64_t batch, int64_t context, uint64_t *state,
                         disp_tensor **x, disp_tensor **y) {
  if (!c || !state || !x || !y) return disp_set_error(DISP_ERR_INVALID_ARG, "corpus_batch: a NULL argument");
  const uint8_t *s = val ? c->val : c->train;
  size_t n = val ? c->nval : c->ntrain;
  if (batch < 1 || context < 1 || (uint64_t)context >= n)
    return disp_set_error(DISP_ERR_INVALID_ARG, "corpus_batch: batch %lld, context %lld over a split of %zu tokens",
                          (long long)batch, (long long)context, n);
  disp_tensor *tx = tokens_tensor(batch, context), *ty = tx ? tokens_tensor(batch, context) : NULL;
  if (!ty) {
    disp_tensor_release(tx);
    return disp_last_status() != DISP_OK ? disp_last_status() : DISP_ERR_NO_MEMORY;
  }
  int64_t *px = disp_tensor_data_ptr(tx), *py = disp_tensor_data_ptr(ty);
  for (int64_t b = 0; b < batch; b++) {
    size_t o = (size_t)corpus_rng_below(state, n - (size_t)context);
    for (int64_t t = 0; t < context; t++) {
      px[b * context + t] = s[o + (size_t)t];
      py[b * context + t] = s[o + (size_t)t + 1];
    }
  }
  *x = tx, *y = ty;
  return DISP_OK;
}

void corpus_decode(const corpus *c, const int64_t *ids, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) out[i] = ids[i] >= 0 && ids[i] < c->vocab ? (char)c->byte[ids[i]] : '?';
}

int corpus_encode(const corpus *c, unsigned char b) {
  for (int i = 0; i < c->vocab; i++)
    if (c->byte[i] == b) return i;
  return -1;
}
