#include "perf_args.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace ringsync::bench {
namespace {

std::string joinArguments(int argc, char** argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) text += (i ? " " : "") + std::string(argv[i]);
  return text;
}

// Each flag is read as text and converted here, so an error names the flag and the value.
struct RawArgs {
  std::string minBytes = "32M", maxBytes = "32M", stepBytes = "0";
  std::string type = "float", op = "sum", backend = "auto", compare;
};

PerfBackend parseBackend(const std::string& text) {
  if (text == "auto") return PerfBackend::kAuto;
  if (text == "ring") return PerfBackend::kRing;
  if (text == "mpi") return PerfBackend::kMpi;
  if (text == "nccl") return PerfBackend::kNccl;
  if (text == "staged") return PerfBackend::kStaged;
  throw std::invalid_argument("--backend " + text + ": expected auto, ring, mpi, nccl or staged");
}

void convert(const RawArgs& raw, const PerfToolTraits& traits, PerfArgs& args) {
  args.minBytes = parseSize(raw.minBytes);
  args.maxBytes = parseSize(raw.maxBytes);
  args.stepBytes = parseSize(raw.stepBytes);
  if (args.maxBytes < args.minBytes) throw std::invalid_argument("-e must be at least -b");
  if (args.stepFactor < 1) throw std::invalid_argument("-f must be at least 1");
  if (args.stepFactor == 1 && args.stepBytes == 0 && args.maxBytes > args.minBytes)
    throw std::invalid_argument("-f 1 needs -i <step bytes> to reach -e");
  if (args.iterations < 1 || args.warmup < 0) throw std::invalid_argument("-n must be >= 1 and -w >= 0");
  if (args.bufferSets < 1) throw std::invalid_argument("--buffers must be at least 1");
  const auto type = parseDataType(raw.type);
  if (!type) throw std::invalid_argument("-d " + raw.type + ": unknown type");
  args.type = *type;
  const auto op = parseReduceOp(raw.op);
  if (!op) throw std::invalid_argument("-o " + raw.op + ": unknown op");
  args.op = *op;
  args.backend = parseBackend(raw.backend);
  if (raw.compare == "mpi") args.compare = PerfCompare::kMpi;
  else if (raw.compare == "nocheck") args.compare = PerfCompare::kNoCheck;
  else if (!raw.compare.empty()) throw std::invalid_argument("--compare " + raw.compare + ": expected mpi or nocheck");
  if (args.compare != PerfCompare::kNone && args.backend == PerfBackend::kMpi)
    throw std::invalid_argument("--compare with --backend mpi: there is no ringsync call to compare");
  if (args.compare == PerfCompare::kMpi && onDevice(args.backend))
    throw std::invalid_argument("--compare mpi needs host buffers (Open MPI here is not CUDA-aware)");
  if (!traits.hasRoot) args.root = -1;
}

}  // namespace

const char* perfBackendName(PerfBackend backend) {
  switch (backend) {
    case PerfBackend::kAuto: return "auto";
    case PerfBackend::kRing: return "ring";
    case PerfBackend::kMpi: return "mpi";
    case PerfBackend::kNccl: return "nccl";
    case PerfBackend::kStaged: return "staged";
  }
  return "invalid";
}

bool onDevice(PerfBackend backend) { return backend == PerfBackend::kNccl || backend == PerfBackend::kStaged; }

std::size_t parseSize(const std::string& text) {
  std::size_t used = 0;
  unsigned long long number = 0;
  try {
    number = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a size (e.g. 8, 64K, 256M, 1G)");
  }
  std::string suffix = text.substr(used);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::toupper(c); });
  int shift = 0;
  if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
  else if (!suffix.empty() && suffix != "B") throw std::invalid_argument("'" + text + "': unknown size suffix");
  if (text[0] == '-') throw std::invalid_argument("'" + text + "': sizes cannot be negative");
  return static_cast<std::size_t>(number) << shift;
}

std::optional<int> parsePerfArgs(int argc, char** argv, const PerfToolTraits& traits, int rank, PerfArgs& args) {
  CLI::App app{std::string(traits.name) + ": ringsync bandwidth and latency, nccl-tests style"};
  RawArgs raw;
  int check = 1;
  app.add_option("-b,--minbytes", raw.minBytes, "smallest message size (e.g. 8, 64K)")->capture_default_str();
  app.add_option("-e,--maxbytes", raw.maxBytes, "largest message size (e.g. 256M)")->capture_default_str();
  app.add_option("-f,--stepfactor", args.stepFactor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-i,--stepbytes", raw.stepBytes, "add this to the size each step (with -f 1)")->capture_default_str();
  app.add_option("-n,--iters", args.iterations, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", args.warmup, "untimed iterations per size")->capture_default_str();
  app.add_option("-c,--check", check, "check every result (0/1)")->capture_default_str();
  app.add_option("-d,--datatype", raw.type, "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double")
      ->capture_default_str();
  if (traits.hasOp) app.add_option("-o,--op", raw.op, "sum prod min max avg")->capture_default_str();
  if (traits.hasRoot) app.add_option("-r,--root", args.root, "broadcast root")->capture_default_str();
  app.add_option("--backend", raw.backend, "auto|ring|mpi (host buffers), nccl|staged (device buffers)")
      ->capture_default_str();
  app.add_option("--compare", raw.compare,
                 "also time, on the same buffers in the same run: mpi = MPI's own collective, "
                 "nocheck = ringsync with RINGSYNC_CHECK=0 (the cost of the call fingerprints)");
  app.add_option("--buffers", args.bufferSets,
                 "separately allocated send/recv buffer pairs the calls cycle through (1: the same buffers every call; "
                 "more: each call on memory the previous ones did not touch, like separately allocated gradients)")
      ->capture_default_str();
  app.add_option("--json", args.jsonPath, "also write the results as JSON to this file (rank 0)");
  try {
    app.parse(argc, argv);
    convert(raw, traits, args);
    args.check = check != 0;
  } catch (const CLI::ParseError& error) {
    const int code = rank == 0 ? app.exit(error) : (error.get_exit_code() == 0 ? 0 : 1);
    return code;
  } catch (const std::invalid_argument& error) {
    if (rank == 0) std::cerr << traits.name << ": " << error.what() << "\n";
    return 2;
  }
  args.command = joinArguments(argc, argv);
  return std::nullopt;
}

std::vector<std::size_t> sweepSizes(const PerfArgs& args, std::size_t elementBytes) {
  std::vector<std::size_t> sizes;
  std::size_t bytes = args.minBytes;
  while (bytes <= args.maxBytes) {
    const std::size_t whole = std::max(elementBytes, bytes / elementBytes * elementBytes);
    if (sizes.empty() || sizes.back() != whole) sizes.push_back(whole);
    const std::size_t next = args.stepFactor > 1
                                 ? static_cast<std::size_t>(static_cast<double>(bytes) * args.stepFactor)
                                 : bytes + args.stepBytes;
    if (next <= bytes) break;
    bytes = next;
  }
  return sizes;
}

}  // namespace ringsync::bench
