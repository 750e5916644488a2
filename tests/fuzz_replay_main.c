/*
 * fuzz_replay_main.c - a main() for a libFuzzer target built without
 * libFuzzer: runs LLVMFuzzerTestOneInput once on each file named on the
 * command line, or on each file of a directory named there. ctest uses it
 * to replay the seed corpora as regression tests under any compiler and
 * the sanitizers; a finding aborts as under the fuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0, got;
  do {
    if (len == cap) {
      uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
      if (!nb) {
        fclose(f);
        free(buf);
        return 1;
      }
      buf = nb;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 0;
}

/* Files of `dir` in name order, so a failure reproduces the same way. */
static int replay_dir(const char *dir, int *count) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort), bad = 0;
  if (n < 0) {
    perror(dir);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    struct stat sb;
    if (names[i]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
      bad |= replay_file(path);
      ++*count;
    }
    free(names[i]);
  }
  free(names);
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      bad |= replay_dir(argv[i], &count);
    } else {
      bad |= replay_file(argv[i]);
      count++;
    }
  }
  printf("replayed %d inputs\n", count);
  return bad;
}
