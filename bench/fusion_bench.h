// fusion_perf's shared parts (fusion_perf.cc: the replicated cases, the tables, main;
// fusion_shard.cc: the sharded cases of --shard): the gradients, the settings, one case of the
// round-robin, and the timing helpers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "closed_form.h"
#include "perf_buffers.h"
#include "perf_pattern.h"
#include "ringsync/ringsync.h"

namespace fusion_perf {

using namespace ringsync;
using Clock = std::chrono::steady_clock;

// --- gradients -----------------------------------------------------------------------------------
// Tensors in host or device memory, one allocation each (as a framework's allocator gives them) or
// --arena: back to back in one. A flat host mirror holds the inputs and, after download, results.
class Gradients {
 public:
  Gradients(const std::vector<std::size_t>& counts, bool arena, bool device) {
    auto allocate = [device](std::size_t elements) {
      return device ? bench::makeDeviceMemory(elements * sizeof(float))
                    : bench::makeHostMemory(elements * sizeof(float));
    };
    for (std::size_t c : counts) mirror_.resize(mirror_.size() + c);
    if (arena) memory_.push_back(allocate(mirror_.size()));
    std::size_t offset = 0;
    for (std::size_t c : counts) {
      if (!arena) memory_.push_back(allocate(c));
      float* data = static_cast<float*>(memory_.back()->data()) + (arena ? offset : 0);
      buffers_.push_back({data, c, DataType::kFloat32});
      offset += c;
    }
  }
  // The closed-form all-reduce input of `rank` at position j in the model: its average is exact,
  // and averaging that again leaves it unchanged, so repeated runs stay checkable.
  void fill(int rank, int ranks) {
    const bench::PeriodicPattern input(DataType::kFloat32, closed_form::allreducePeriod(ranks), [&](std::size_t j) {
      return closed_form::allreduceInput(ReduceOp::kAvg, DataType::kFloat32, rank, ranks, j);
    });
    input.fill(mirror_.data(), mirror_.size());
    transfer(true);
  }
  // Elements that differ from the closed-form result of `op` (avg; sum for MPI's one sum).
  std::size_t countWrong(ReduceOp op, int ranks) {
    transfer(false);
    const bench::PeriodicPattern expected(DataType::kFloat32, closed_form::allreducePeriod(ranks), [&](std::size_t j) {
      return closed_form::allreduceExpected(op, DataType::kFloat32, ranks, j);
    });
    return expected.countMismatches(mirror_.data(), mirror_.size());
  }
  const std::vector<GradientBuffer>& buffers() const { return buffers_; }
  std::size_t total() const { return mirror_.size(); }

 private:
  // The harness moves whole allocations: an arena at once, separate tensors one by one.
  void transfer(bool up) {
    std::size_t offset = 0;
    for (std::size_t m = 0; m < memory_.size(); ++m) {
      const std::size_t count = memory_.size() == 1 ? mirror_.size() : buffers_[m].count;
      if (count > 0) {
        float* host = mirror_.data() + offset;
        up ? memory_[m]->upload(host, count * sizeof(float)) : memory_[m]->download(host, count * sizeof(float));
      }
      offset += count;
    }
  }

  std::vector<std::unique_ptr<bench::PerfMemory>> memory_;
  std::vector<float> mirror_;
  std::vector<GradientBuffer> buffers_;
};

// --- timing --------------------------------------------------------------------------------------
inline double slowestRank(double seconds) {
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

inline double timeOnce(const std::function<void()>& step) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  step();
  return slowestRank(std::chrono::duration<double>(Clock::now() - start).count());
}

inline std::string mib(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%gM", value);
  return text;
}

inline std::size_t toBytes(double mebibytes) { return static_cast<std::size_t>(mebibytes * 1024 * 1024); }

struct Settings {
  int warmup = 2;
  int iters = 10;
  std::vector<double> bucketMiB{1};  // the library defaults (options.h)
  std::vector<double> firstBucketMiB{0.25};
  bool arena = false;
  bool compress = false;
  double backwardMs = 0;  // 0: as long as `fused` takes
  bool listShapes = false;
  bool breakdown = false;
  std::size_t scaleDown = 1;   // divide every tensor's size by this (the latency-bound regime)
  std::string device = "cpu";  // where the gradients live: cpu | gpu
  bool shard = false;          // also the sharded cases (ShardedGradientAverager)
};

struct Row {
  std::string mode;
  std::string bucket = "-", first = "-";
  std::size_t buckets = 0;
  double seconds = 0, exposed = -1;
  std::size_t wrong = 0;
  // Averager rows: bytes each rank sends per step by the ring's count, and the optimizer state
  // (SGD momentum: one float32 per parameter it updates) of the rank that holds the most.
  std::size_t wireBytes = 0, stateBytes = 0;
};

// One way of averaging: how to set up fresh inputs, one run, and how many values came out wrong.
struct Case {
  Row row;
  std::function<void()> prepare;
  std::function<void()> step;
  std::function<std::size_t()> countWrong;
  std::function<double()> exposed;  // seconds the caller waited for communication, if it applies
  std::function<std::vector<BucketTiming>()> lastStep = nullptr;  // an averager case's buckets, for --breakdown
};

// Marks the gradients last to first, as a backward pass of `seconds` produces them (in proportion to
// their size; 0: at once), the same schedule on every rank.
template <typename Mark> void simulateBackward(const Gradients& grads, double seconds, Mark&& mark) {
  const auto& g = grads.buffers();
  const auto start = Clock::now();
  std::size_t done = 0;
  for (std::size_t i = g.size(); i-- > 0;) {
    done += g[i].count;
    if (seconds > 0) {
      const double at = seconds * static_cast<double>(done) / static_cast<double>(grads.total());
      std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
    }
    mark(i);
  }
}

// The simulated backward's length: the median of the fused runs while warming up.
struct Calibration {
  double seconds = 0;
  std::vector<double> samples;
};

// State the cases share: the gradients, one buffer of the model's size per baseline, the stream
// device work goes on (the host stream does nothing), the averagers.
struct Bench {
  Communicator& comm;
  Gradients& grads;
  bench::PerfStream& stream;
  std::vector<std::unique_ptr<Gradients>> flats;
  std::vector<std::unique_ptr<GradientAverager>> averagers;
  std::vector<std::unique_ptr<ShardedGradientAverager>> sharded;
  std::vector<std::unique_ptr<Calibration>> calibrations;
  bool warmingUp = true;  // the simulated backward's length is calibrated until warm-up ends
  // --shard: the sharded cases' own gradients (a reduce-scatter leaves only the shards averaged, so
  // they cannot share the replicated cases', which stay averaged) and the parameters they gather.
  std::unique_ptr<Gradients> shardGradients, parameters;
};

// --shard (fusion_shard.cc): for a bucket setting, the sharded pair, after the replicated pair
// (whose calibration the overlapped case shares): shard_fused and shard_overlap.
void addShardedPair(const Settings& s, Bench& b, std::vector<Case>& cases, Calibration& calibration, double bucket,
                    double first);
// The per-rank table: bytes sent per step, optimizer-state bytes and step time, each averager row
// next to the replicated one of its bucket setting.
void printPerRank(const std::vector<Row>& rows);

}  // namespace fusion_perf
