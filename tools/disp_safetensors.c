/*
 * disp_safetensors.c - `disp safetensors FILE`: loads a safetensors file
 * with the library's reader (so it accepts and rejects exactly what
 * disp_safetensors_load does) and lists its metadata, then each tensor's
 * name, dtype and shape in file order.
 */
#include <stdio.h>
#include <string.h>

#include "disp.h"
#include "disp_safetensors.h"

static void print_shape(const disp_tensor *t) {
  putchar('[');
  for (int d = 0; d < disp_tensor_ndim(t); d++) printf("%s%lld", d ? ", " : "", (long long)disp_tensor_sizes(t)[d]);
  putchar(']');
}

static void list(const char *path, const disp_safetensors *set) {
  size_t n = disp_safetensors_count(set), width = 4, bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const disp_tensor *t = disp_safetensors_tensor(set, i);
    size_t len = strlen(disp_safetensors_name(set, i));
    if (len > width) width = len;
    bytes += (size_t)disp_tensor_numel(t) * disp_tensor_itemsize(t);
  }
  printf("%s: %zu tensor%s, %zu bytes of data\n", path, n, n == 1 ? "" : "s", bytes);
  for (size_t i = 0; i < disp_safetensors_metadata_count(set); i++)
    printf("__metadata__ %s: %s\n", disp_safetensors_metadata_key(set, i), disp_safetensors_metadata_value(set, i));
  for (size_t i = 0; i < n; i++) {
    const disp_tensor *t = disp_safetensors_tensor(set, i);
    printf("%-*s  %-4s  ", (int)width, disp_safetensors_name(set, i),
           disp_safetensors_dtype_name(disp_tensor_dtype(t)));
    print_shape(t);
    putchar('\n');
  }
}

int disp_tool_safetensors(int argc, char **argv) {
  if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
    puts("usage: disp safetensors FILE\n\nLists a safetensors file's metadata and each tensor's name, dtype and\n"
         "shape, in file order; a malformed file is an error (exit 1) that names the\n"
         "tensor and the cause.");
    return 0;
  }
  if (argc != 1) {
    fputs("usage: disp safetensors FILE\n", stderr);
    return 2;
  }
  disp_safetensors *set = NULL;
  if (disp_safetensors_load(argv[0], &set) != DISP_OK) {
    fprintf(stderr, "disp safetensors: %s\n", disp_last_error());
    return 1;
  }
  list(argv[0], set);
  disp_safetensors_free(set);
  return 0;
}
