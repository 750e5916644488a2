// record.cpp - the gradient lines of a seed case, computed by libtorch's
// autograd (refgen --record, and --verify's check of them). See refgen.h.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <stdexcept>

#include "refgen.h"

namespace refgen {

namespace {

// The argument position a requires_grad label names ("self"; Tensor[]
// elements are not recorded here).
size_t label_arg(const Case &c, const std::string &label) {
  for (size_t a = 0; a < c.args.size(); a++)
    if (c.args[a].name == label && c.args[a].v.kind == Kind::Tensor) return a;
  throw std::runtime_error(c.name + ": requires_grad names no tensor argument '" + label + "'");
}

}  // namespace

std::vector<std::string> record_grads(const Case &c, std::string *node) {
  node->clear();
  if (c.requires_grad.empty()) return {};
  c10::OperatorHandle op = find_operator(c.op);
  const auto &schema = op.schema();
  std::vector<c10::IValue> stack;
  for (const auto &a : c.args) stack.push_back(arg_ivalue(a.v));
  // Leaves: the labelled inputs; a written one (add_'s self) gets its
  // gradient with respect to its value before the call, through a copy.
  std::vector<at::Tensor> leaves;
  for (const auto &label : c.requires_grad) {
    size_t a = label_arg(c, label);
    at::Tensor leaf = stack[a].toTensor().detach().requires_grad_(true);
    leaves.push_back(leaf);
    const auto &alias = schema.arguments()[a].alias_info();
    stack[a] = alias && alias->isWrite() ? leaf.mul(1) : leaf;
  }
  op.callBoxed(&stack);
  std::vector<at::Tensor> outs, gouts;
  std::vector<std::string> lines;
  std::string req = "requires_grad";
  for (const auto &l : c.requires_grad) req += " " + l;
  lines.push_back(req);
  // grad_output i names the i-th tensor of the returns with every Tensor[]
  // return's elements counted one by one (split's pieces), in order.
  std::vector<at::Tensor> flat;
  for (const auto &v : stack) {
    if (v.isTensorList())
      for (const at::Tensor &t : v.toTensorVector()) flat.push_back(t);
    else flat.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
  }
  for (const auto &g : c.grad_outputs) {
    if ((size_t)g.ret >= flat.size() || !flat[g.ret].defined())
      throw std::runtime_error(c.name + ": grad_output " + std::to_string(g.ret) + " names no tensor return");
    outs.push_back(flat[g.ret]);
    gouts.push_back(arg_ivalue(g.v).toTensor());
    lines.push_back("grad_output " + std::to_string(g.ret) + " " + format_value(g.v));
  }
  if (!outs.empty() && outs[0].grad_fn()) *node = outs[0].grad_fn()->name();
  std::vector<at::Tensor> grads;
  if (!outs.empty()) grads = torch::autograd::grad(outs, leaves, gouts, false, false, true);
  for (size_t k = 0; k < grads.size(); k++)
    if (grads[k].defined()) lines.push_back("grad " + c.requires_grad[k] + " " + format_tensor(grads[k], false));
  return lines;
}

}  // namespace refgen
