/* hello.c - <DESC> two 2x3 tensors from C data, add, relu, print, with the
 * error check: the concise API (disp/easy.h) in 8 lines. </DESC> */
#include <disp.h>
int main(void) {
  disp_scope s = disp_scope_begin();
  float x[] = {1, -2, 3, -4, 5, -6}, y[] = {6, 5, 4, 3, 2, 1};
  disp_status st = disp_print(disp_relu(disp_add(disp_from(x, 2, 3), disp_from(y, 2, 3))));
  if (st != DISP_OK) fprintf(stderr, "hello: %s\n", disp_last_error());
  return disp_scope_end(&s), st != DISP_OK;
}
