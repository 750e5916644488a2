/*
 * test_node_names.c - every derivative formula's node name is 1.13's.
 *
 * The oracle, tests/data/node_names_113.tsv, is what libtorch 1.13's grad_fn->name() printed for each
 * operator called with inputs that require grad (its generated
 * VariableType, and its hand-written CopyBackwards, whose C++ name() carries
 * the namespace: the formula table keeps it for messages, disp_node_name
 * drops it). The formulas are read from the table generated from the
 * manifest, so a formula added without an oracle line fails too. AccumulateGrad and
 * CopySlices are named in tests/test_autograd.c.
 */
#include <string.h>

#include "test.h"
#include "autograd/formula.h"

#define MAX_NAMES 512

static struct {
  char op[96], node[96];
} names_113[MAX_NAMES];
static size_t n_names;

/* tests/data/node_names_113.tsv: "op<TAB>node" lines, # comments. */
static int load_names(void) {
  FILE *f = fopen(DISP_TEST_DATA_DIR "/node_names_113.tsv", "r");
  if (!f) return 0;
  char line[256];
  while (fgets(line, sizeof line, f) && n_names < MAX_NAMES) {
    if (line[0] == '#' || sscanf(line, "%95[^\t]\t%95s", names_113[n_names].op, names_113[n_names].node) != 2)
      continue;
    n_names++;
  }
  fclose(f);
  return n_names > 0;
}

static const char *expected(const char *op) {
  for (size_t i = 0; i < n_names; i++)
    if (!strcmp(names_113[i].op, op)) return names_113[i].node;
  return NULL;
}

TEST(every_formula_names_its_node_as_1_13) {
  ASSERT_TRUE(load_names());
  for (size_t i = 0; i < disp__ag_formula_count; i++) {
    const ag_formula *f = &disp__ag_formulas[i];
    if (!expected(f->op)) fprintf(stderr, "%s: no 1.13 name recorded\n", f->op);
    ASSERT_EQ_STR(f->node, expected(f->op));
  }
  /* and nothing recorded for an operator the manifest lacks */
  ASSERT_EQ_INT(disp__ag_formula_count, n_names);
  return 0;
}

static disp_tensor *filled(int64_t n, double v, int requires_grad) {
  disp_tensor *t = NULL;
  if (disp_aten_full((disp_int_list){&n, 1}, disp_scalar_double(v), DISP_DTYPE_FLOAT32, -1, (disp_opt_device){0},
                     (disp_opt_bool){0}, &t) != DISP_OK)
    return NULL;
  if (requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) disp_tensor_release(t), t = NULL;
  return t;
}

/* The version check names the saved tensor's grad_fn by 1.13's C++
 * name(): a base rebased by an update through its view is output 0 of
 * torch::autograd::CopySlices (1.13's message, from libtorch), while
 * disp_node_name gives the class name Python shows. */
TEST(messages_name_hand_written_nodes_as_1_13) {
  disp_tensor *x = filled(4, 1, 1), *w = filled(4, 1, 1), *two = filled(2, 2, 0), *c = NULL, *v = NULL, *d = NULL;
  disp_tensor *r = NULL, *s = NULL;
  ASSERT_TRUE(x && w && two);
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(1), &c));
  ASSERT_OK(disp_aten_slice_Tensor(c, 0, (disp_opt_int){0, true}, (disp_opt_int){2, true}, 1, &v));
  ASSERT_OK(disp_aten_mul__Tensor(v, two, &r));
  disp_tensor_release(r), r = NULL;
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(c)), "CopySlices");
  ASSERT_OK(disp_aten_mul_Tensor(c, w, &d)); /* saves c for w's gradient */
  disp_tls_state g = disp_grad_mode_push(0);
  ASSERT_OK(disp_aten_add__Tensor(c, c, disp_scalar_int(0), &r)); /* a write: version 2 */
  disp_tls_restore(g);
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_sum(d, -1, &s));
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "one of the variables needed for gradient computation has been modified by an "
                                     "inplace operation: [CPUFloatType [4]], which is output 0 of "
                                     "torch::autograd::CopySlices, is at version 2; expected version 1 instead.");
  disp_tensor_release(s), disp_tensor_release(d), disp_tensor_release(v), disp_tensor_release(c);
  disp_tensor_release(two), disp_tensor_release(w), disp_tensor_release(x);
  return 0;
}

TEST_LIST = {TEST_ENTRY(every_formula_names_its_node_as_1_13), TEST_ENTRY(messages_name_hand_written_nodes_as_1_13),
             TEST_END};

TEST_MAIN()
