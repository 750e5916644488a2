/*
 * test_node_names.c - every derivative formula's node name is 1.13's.
 *
 * The table is what libtorch 1.13's grad_fn->name() printed for each
 * operator called with inputs that require grad (its generated
 * VariableType, and its hand-written CopyBackwards, whose C++ name() carries
 * the namespace: the formula table keeps it for messages, disp_node_name
 * drops it). The formulas are read from their tables directly, so a
 * formula added without an entry here fails too. AccumulateGrad and
 * CopySlices are named in tests/test_autograd.c.
 */
#include <string.h>

#include "test.h"
#include "autograd/formula.h"

static const struct {
  const char *op, *node;
} names_113[] = {
    {"aten::_to_copy", "ToCopyBackward0"},
    {"aten::clone", "CloneBackward0"},
    {"aten::copy_", "torch::autograd::CopyBackwards"},
    {"aten::fill_.Scalar", "FillBackward2"},
    {"aten::zero_", "ZeroBackward0"},
    {"aten::select.int", "SelectBackward0"},
    {"aten::slice.Tensor", "SliceBackward0"},
    {"aten::cat", "CatBackward0"},
    {"aten::stack", "StackBackward0"},
    {"aten::mm", "MmBackward0"},
    {"aten::addmm", "AddmmBackward0"},
    {"aten::bmm", "BmmBackward0"},
    {"aten::_log_softmax", "LogSoftmaxBackward0"},
    {"aten::_softmax", "SoftmaxBackward0"},
    {"aten::_softmax_backward_data", "SoftmaxBackwardDataBackward0"},
    {"aten::_log_softmax_backward_data", "LogSoftmaxBackwardDataBackward0"},
    {"aten::nll_loss_forward", "NllLossBackward0"},
    {"aten::nll_loss_backward", "NllLossBackwardBackward0"},
    {"aten::mse_loss", "MseLossBackward0"},
    {"aten::mse_loss_backward", "MseLossBackwardBackward0"},
    {"aten::native_dropout", "NativeDropoutBackward0"},
    {"aten::native_dropout_backward", "NativeDropoutBackwardBackward0"},
    {"aten::add.Tensor", "AddBackward0"},
    {"aten::add_.Tensor", "AddBackward0"},
    {"aten::add.Scalar", "AddBackward1"},
    {"aten::sub.Tensor", "SubBackward0"},
    {"aten::sub_.Tensor", "SubBackward0"},
    {"aten::sub.Scalar", "SubBackward1"},
    {"aten::mul.Tensor", "MulBackward0"},
    {"aten::mul_.Tensor", "MulBackward0"},
    {"aten::mul.Scalar", "MulBackward1"},
    {"aten::div.Tensor", "DivBackward0"},
    {"aten::div_.Tensor", "DivBackward0"},
    {"aten::div.Scalar", "DivBackward1"},
    {"aten::neg", "NegBackward0"},
    {"aten::relu", "ReluBackward0"},
    {"aten::relu_", "ReluBackward0"},
    {"aten::exp", "ExpBackward0"},
    {"aten::log", "LogBackward0"},
    {"aten::tanh", "TanhBackward0"},
    {"aten::sigmoid", "SigmoidBackward0"},
    {"aten::pow.Tensor_Scalar", "PowBackward0"},
    {"aten::sqrt", "SqrtBackward0"},
    {"aten::rsqrt", "RsqrtBackward0"},
    {"aten::sigmoid_backward", "SigmoidBackwardBackward0"},
    {"aten::tanh_backward", "TanhBackwardBackward0"},
    {"aten::threshold_backward", "ThresholdBackwardBackward0"},
    {"aten::sum", "SumBackward0"},
    {"aten::sum.dim_IntList", "SumBackward1"},
    {"aten::mean", "MeanBackward0"},
    {"aten::mean.dim", "MeanBackward1"},
    {"aten::amax", "AmaxBackward0"},
    {"aten::max.dim", "MaxBackward0"},
    {"aten::abs", "AbsBackward0"},
    {"aten::clamp", "ClampBackward1"},
    {"aten::clamp_min", "ClampMinBackward0"},
    {"aten::maximum", "MaximumBackward0"},
    {"aten::minimum", "MinimumBackward0"},
    {"aten::where.self", "WhereBackward0"},
    {"aten::t", "TBackward0"},
    {"aten::view", "ViewBackward0"},
    {"aten::_reshape_alias", "ReshapeAliasBackward0"},
    {"aten::expand", "ExpandBackward0"},
    {"aten::permute", "PermuteBackward0"},
    {"aten::transpose.int", "TransposeBackward0"},
    {"aten::unsqueeze", "UnsqueezeBackward0"},
    {"aten::squeeze.dim", "SqueezeBackward1"},
    {"aten::as_strided", "AsStridedBackward0"},
    {"aten::convolution", "ConvolutionBackward0"},
    {"aten::convolution_backward", "ConvolutionBackwardBackward0"},
    {"aten::max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0"},
    {"aten::max_pool2d_with_indices_backward", "MaxPool2DWithIndicesBackwardBackward0"},
};

static const char *expected(const char *op) {
  for (size_t i = 0; i < sizeof names_113 / sizeof *names_113; i++)
    if (!strcmp(names_113[i].op, op)) return names_113[i].node;
  return NULL;
}

TEST(every_formula_names_its_node_as_1_13) {
  const ag_formula_set *sets[] = {
      &disp__ag_formulas_pointwise, &disp__ag_formulas_reduce, &disp__ag_formulas_linalg,
      &disp__ag_formulas_nn,        &disp__ag_formulas_conv,   &disp__ag_formulas_shape,
      &disp__ag_formulas_select,    &disp__ag_formulas_copy,   &disp__ag_formulas_index,
      &disp__ag_formulas_strided,
  };
  size_t seen = 0;
  for (size_t s = 0; s < sizeof sets / sizeof *sets; s++)
    for (size_t i = 0; i < sets[s]->n; i++, seen++) {
      const ag_formula *f = &sets[s]->formulas[i];
      if (!expected(f->op)) fprintf(stderr, "%s: no 1.13 name recorded\n", f->op);
      ASSERT_EQ_STR(f->node, expected(f->op));
    }
  ASSERT_EQ_INT(seen, sizeof names_113 / sizeof *names_113);
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
