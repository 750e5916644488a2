// refgen - more PyTorch reference cases for `disp check-ops`, computed by
// libtorch (Debian's libtorch-dev 1.13.1). See refgen.h.
//
//   refgen --out DIR [--max N] SEED.txt...   variants of every seed case, one file per operator
//   refgen --verify SEED.txt...              rerun the seed cases and diff with what they record
//   refgen --record SEED.txt...              a seed file recorded in full, to stdout
//
// --verify is how the generator is checked: the seeds were recorded from
// Python (torch.ops.aten...), so every recorded line this program writes
// differently is a bug here, not in libdispatch. That includes the gradient
// lines, which --record writes for a new operator's seed cases (its args,
// requires_grad and grad_output lines; everything else is computed) and
// whose grad_fn names it reports on stderr as "node OP NAME".
#include <ATen/Parallel.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include "refgen.h"

namespace {

using namespace refgen;

const char *const kUsage =
    "usage: refgen --out DIR [--max N] [--salt S] SEED.txt...\n"
    "       refgen --verify SEED.txt...\n"
    "       refgen --record SEED.txt...\n\n"
    "Makes variants of reference cases (tests/data/ops format), runs them through\n"
    "libtorch's boxed dispatcher and writes DIR/<op>.txt. --max caps the variants per\n"
    "seed case (default 8; large cases get fewer); --salt S draws another batch (the\n"
    "committed files use none). --verify reruns the seeds instead\n"
    "and prints every recorded line libtorch's result does not reproduce. --record\n"
    "prints each seed file with its results and gradient lines computed by libtorch\n"
    "and the grad_fn names on stderr (\"node OP NAME\").\n";

// Seeds with many elements get fewer variants (the folder stays small).
size_t budget(const Case &c, size_t max_variants) {
  int64_t elems = 0;
  for (const auto &a : c.args) {
    if (a.v.kind == Kind::Tensor || a.v.kind == Kind::Storage) elems += a.v.t.storage().nbytes() / a.v.t.element_size();
    for (const auto &e : a.v.elems)
      if (e.kind == Kind::Tensor) elems += e.t.storage().nbytes() / e.t.element_size();
  }
  if (elems > 400) return std::min<size_t>(max_variants, 2);
  if (elems > 150) return std::min<size_t>(max_variants, 4);
  if (elems > 60) return std::min<size_t>(max_variants, 6);
  return max_variants;
}

// Runs c in a child process: a variant on which 1.13 reads memory it does
// not own (Note [guarded inputs] in run.cpp) crashes the child, not the
// generator. False when the child died.
bool run_isolated(const Case &c, RunResult &r) {
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fd[0]);
    std::string text;
    try {
      RunResult got = run_case(c);
      text = std::string(got.error ? "E" : "-") + (got.missing_dtype_kernel ? "M" : "-") +
             (got.unwritable ? "U" : "-") + "\n";
      for (const auto &l : got.lines) text += l + "\n";
    } catch (const std::exception &e) {
      text = std::string("X") + e.what() + "\n";
    }
    for (size_t done = 0; done < text.size();) {
      ssize_t n = write(fd[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += (size_t)n;
    }
    _exit(0);
  }
  close(fd[1]);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, (size_t)n);
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) return false;
  if (text[0] == 'X') throw std::runtime_error(c.name + ": " + text.substr(1));
  r = RunResult();
  r.error = text[0] == 'E';
  r.missing_dtype_kernel = text[1] == 'M';
  r.unwritable = text[2] == 'U';
  size_t pos = text.find('\n') + 1;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1)
    r.lines.push_back(text.substr(pos, nl - pos));
  return true;
}

int verify(const std::vector<std::string> &paths) {
  long ok = 0, bad = 0;
  for (const auto &p : paths) {
    File f = read_file(p);
    for (const auto &c : f.cases) {
      RunResult r;
      try {
        r = run_case(c);
      } catch (const std::exception &e) {
        std::printf("HARNESS %s: %s\n", c.name.c_str(), e.what());
        bad++;
        continue;
      }
      std::string node;
      std::vector<std::string> want = c.results, got = r.lines;
      if (!r.error) {
        std::vector<std::string> g = record_grads(c, &node);
        want.insert(want.end(), c.grad_lines.begin(), c.grad_lines.end());
        got.insert(got.end(), g.begin(), g.end());
      }
      if (want == got) { ok++; continue; }
      bad++;
      std::printf("DIFF %s\n", c.name.c_str());
      for (const auto &l : want) std::printf("  want: %.300s\n", l.c_str());
      for (const auto &l : got) std::printf("  got:  %.300s\n", l.c_str());
    }
  }
  std::printf("%ld reproduced, %ld differ\n", ok, bad);
  return bad ? 1 : 0;
}

int record(const std::vector<std::string> &paths) {
  for (const auto &p : paths) {
    File f = read_file(p);
    for (const auto &h : f.header) std::printf("%s\n", h.c_str());
    for (auto c : f.cases) {
      RunResult r = run_case(c);
      c.results = r.lines;
      std::string node, text = format_case(c);
      if (!r.error) {
        std::string grads;
        for (const auto &l : record_grads(c, &node)) grads += l + "\n";
        text.insert(text.size() - 4, grads);  // before "end\n"
      }
      std::fputs(text.c_str(), stdout);
      if (!node.empty()) std::fprintf(stderr, "node %s %s\n", c.op.c_str(), node.c_str());
    }
  }
  return 0;
}

int generate(const std::string &dir, size_t max_variants, const std::string &salt,
             const std::vector<std::string> &paths) {
  long total = 0, errors = 0, missing = 0, dropped = 0;
  for (const auto &p : paths) {
    File f = read_file(p);
    if (f.cases.empty()) continue;
    std::string out_path = dir + "/" + f.stem + ".txt";
    std::ofstream out(out_path);
    if (!out) throw std::runtime_error("cannot write " + out_path);
    out << "# libdispatch op vectors (generated): " << f.cases[0].op << "\n";
    for (const auto &h : f.header)
      if (h.rfind("# schema:", 0) == 0) out << h << "\n";
    out << "# generated by tools/refgen from Debian's libtorch 1.13.1 (CPU kernels, one thread, boxed "
           "dispatcher calls) as variants of the seed cases in tests/data/ops/"
        << f.stem << ".txt; each note names the seed case it derives from; format: ../ops/README.md\n";
    long n = 1000;  // after every seed number, so names stay unique next to them
    for (const auto &seed : f.cases) {
      for (auto &v : make_variants(seed, budget(seed, max_variants), salt)) {
        Case c;
        c.name = f.stem + "#" + std::to_string(n++);
        c.op = seed.op;
        c.args = std::move(v.args);
        c.notes.push_back("from " + seed.name + ": " + v.what);
        RunResult r;
        if (!run_isolated(c, r) || r.unwritable) {
          dropped++;  // libtorch crashed, read memory it does not own or made a view past it
          n--;
          continue;
        }
        if (r.missing_dtype_kernel) {
          c.notes.back() += "; no CPU kernel in 1.13";
          missing++;
        }
        errors += r.error;
        c.results = std::move(r.lines);
        out << format_case(c);
        total++;
      }
    }
    std::fprintf(stderr, "%s: %ld cases\n", out_path.c_str(), n - 1000);
  }
  std::fprintf(stderr, "%ld cases (%ld errors, %ld of them a missing dtype kernel); %ld variants dropped "
               "(libtorch crashed, read or viewed memory it does not own)\n", total, errors, missing, dropped);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::string dir;
  size_t max_variants = 8;
  std::string salt;
  bool do_verify = false, do_record = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--max") && i + 1 < argc) max_variants = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--salt") && i + 1 < argc) salt = argv[++i];
    else if (!std::strcmp(argv[i], "--verify")) do_verify = true;
    else if (!std::strcmp(argv[i], "--record")) do_record = true;
    else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) { std::fputs(kUsage, stdout); return 0; }
    else if (argv[i][0] == '-') { std::fprintf(stderr, "refgen: unknown option %s\n%s", argv[i], kUsage); return 2; }
    else paths.push_back(argv[i]);
  }
  if (paths.empty() || (!do_verify && !do_record && dir.empty())) { std::fputs(kUsage, stderr); return 2; }
  at::set_num_threads(1);  // as the reference: one thread, summation order of one
  try {
    if (do_record) return record(paths);
    return do_verify ? verify(paths) : generate(dir, max_variants, salt, paths);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "refgen: %s\n", e.what());
    return 1;
  }
}
