// Command line of the bench binaries, nccl-tests' flags plus ringsync's:
//   -b/-e/-f/-i  sizes (min, max, multiplication factor, or a fixed increment)
//   -n/-w        timed iterations / warm-up iterations per size
//   -c           check the results (0/1)
//   -d/-o/-r     type, op, root
//   --backend auto|ring|mpi|nccl|staged, --compare mpi|nocheck, --json FILE
//   --buffers K  the timed calls cycle through K separately allocated buffer pairs
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ringsync/types.h"

namespace ringsync::bench {

enum class PerfBackend { kAuto, kRing, kMpi, kNccl, kStaged };
// What each row is also measured against, in the same run on the same buffers: MPI's own
// collective, or ringsync itself with the call fingerprints off (RINGSYNC_CHECK=0).
enum class PerfCompare { kNone, kMpi, kNoCheck };

const char* perfBackendName(PerfBackend backend);
// nccl and staged run on device buffers; the others on host buffers.
bool onDevice(PerfBackend backend);

struct PerfArgs {
  std::size_t minBytes = 32 * 1024 * 1024;
  std::size_t maxBytes = 32 * 1024 * 1024;
  double stepFactor = 1;
  std::size_t stepBytes = 0;  // -i: additive step; used when stepFactor is 1 (nccl-tests' rule)
  int iterations = 20;
  int warmup = 5;
  bool check = true;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  PerfBackend backend = PerfBackend::kAuto;
  PerfCompare compare = PerfCompare::kNone;
  // Separately allocated send/recv pairs the calls cycle through: 1, every call on the same (hot)
  // buffers as nccl-tests does; more, each call on memory the previous ones did not touch, as a
  // training step's separately allocated gradients are.
  int bufferSets = 1;
  std::string jsonPath;
  std::string command;  // argv joined, for the header and the JSON file
};

// What the tool supports, so one parser serves every collective.
struct PerfToolTraits {
  const char* name;  // "allreduce_perf"
  bool hasOp;
  bool hasRoot;
};

// Parses argv. On --help or a bad flag, prints (rank 0 only) and returns the exit code to use.
std::optional<int> parsePerfArgs(int argc, char** argv, const PerfToolTraits& traits, int rank, PerfArgs& args);

// The message sizes of the sweep, in bytes, each a whole number of elements (at least one).
std::vector<std::size_t> sweepSizes(const PerfArgs& args, std::size_t elementBytes);

// "256MiB" style parsing of -b/-e/-i (K, M, G are powers of 1024, as in nccl-tests).
std::size_t parseSize(const std::string& text);

}  // namespace ringsync::bench
