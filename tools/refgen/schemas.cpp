// schemas - prints every operator schema libtorch registers, one a line,
// exactly as FunctionSchema prints itself (sorted). This is how
// tests/data/schemas_aten_113.txt, the oracle the operator manifest's
// schemas are checked against, was measured:
//
//   build/tools/refgen/schemas aten > tests/data/schemas_aten_113.txt
//
// With a namespace argument only that namespace's operators are printed.
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::string ns = argc > 1 ? std::string(argv[1]) + "::" : "";
  std::vector<std::string> lines;
  for (const auto &op : torch::jit::getAllOperators()) {
    std::ostringstream s;
    s << op->schema();
    if (ns.empty() || s.str().rfind(ns, 0) == 0) lines.push_back(s.str());
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  for (const auto &l : lines) std::cout << l << "\n";
  return 0;
}
