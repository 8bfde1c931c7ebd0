// fusion_perf --shard: the sharded cases (ShardedGradientAverager) and the per-rank table. A step is
// what a ZeRO-1/2 trainer does: backward marks the gradients, synchronize() (the reduce-scatters),
// the "update" of this rank's shard (a copy of the averaged shard into the parameters: what an
// optimizer reads and writes, at memory speed), markUpdated, then forward waits for each parameter
// (the all-gathers). The parameters then hold the average everywhere: that is what is checked.
#include <memory>

#include "fusion_bench.h"

namespace fusion_perf {
namespace {

// One sharded step; returns the seconds the caller was blocked on communication (synchronize()
// and the waits for parameters). `backward` as in simulateBackward; forward lasts half as long.
double shardedStep(Bench& b, ShardedGradientAverager& averager, double backward) {
  CUstream_st* const stream = b.stream.stream();
  Gradients& gradients = *b.shardGradients;
  simulateBackward(gradients, backward, [&](std::size_t i) { averager.markReady(i, stream); });
  averager.synchronize();
  double exposed = averager.stats().lastSynchronizeSeconds;
  const std::vector<GradientBuffer>& grads = gradients.buffers();
  const std::vector<GradientBuffer>& params = b.parameters->buffers();
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const ShardRange own = averager.shard(i);
    if (!own.empty())
      b.stream.copy(static_cast<float*>(params[i].data) + own.begin, static_cast<float*>(grads[i].data) + own.begin,
                    own.count() * sizeof(float));
    averager.markUpdated(i, stream);
  }
  const double forward = backward / 2;
  const auto start = Clock::now();
  std::size_t done = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto waitStart = Clock::now();
    averager.waitForParameter(i, stream);
    exposed += std::chrono::duration<double>(Clock::now() - waitStart).count();
    done += params[i].count;
    if (forward > 0)
      std::this_thread::sleep_until(start + std::chrono::duration<double>(forward * static_cast<double>(done) /
                                                                          static_cast<double>(gradients.total())));
  }
  averager.gatherParameters();  // device parameters: until the gathers landed
  b.stream.synchronize();
  return exposed;
}

std::size_t largestState(const ShardedGradientAverager& averager) {
  unsigned long long mine = averager.shardElements() * sizeof(float), largest = 0;
  MPI_Allreduce(&mine, &largest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return static_cast<std::size_t>(largest);
}

}  // namespace

void addShardedPair(const Settings& s, Bench& b, std::vector<Case>& cases, Calibration& calibration, double bucket,
                    double first) {
  if (!b.parameters) {
    std::vector<std::size_t> counts;
    for (const GradientBuffer& g : b.grads.buffers()) counts.push_back(g.count);
    b.shardGradients = std::make_unique<Gradients>(counts, s.arena, s.device == "gpu");
    b.parameters = std::make_unique<Gradients>(counts, s.arena, s.device == "gpu");
  }
  GradientAveragerOptions options;
  options.bucketBytes = toBytes(bucket);
  options.firstBucketBytes = toBytes(first);
  options.compressFp16 = s.compress;
  options.overlap = false;
  auto make = [&] {
    return std::make_unique<ShardedGradientAverager>(b.comm, b.shardGradients->buffers(), b.parameters->buffers(),
                                                     options);
  };
  ShardedGradientAverager& fused = *b.sharded.emplace_back(make());
  options.overlap = true;
  ShardedGradientAverager& overlapped = *b.sharded.emplace_back(make());
  // Fresh inputs: the gradients, and stale parameters (each rank's own input) that the gather must
  // replace by the average.
  auto prepare = [&b] {
    b.shardGradients->fill(b.comm.rank(), b.comm.size());
    b.parameters->fill(b.comm.rank(), b.comm.size());
  };
  auto countWrong = [&b] { return b.parameters->countWrong(ReduceOp::kAvg, b.comm.size()); };
  Row row{"shard_fused", mib(bucket), mib(first), fused.bucketCount()};
  row.wireBytes = fused.stats().wireBytesPerStep;
  row.stateBytes = largestState(fused);
  cases.push_back({row,
                   prepare,
                   [&b, &fused] { shardedStep(b, fused, 0); },
                   countWrong,
                   {},
                   [&fused] { return fused.lastStepBuckets(); }});
  row.mode = overlapped.overlapping() ? "shard_overlap" : "shard_overlap(off!)";
  auto exposed = std::make_shared<double>(0);
  cases.push_back(
      {row, prepare,
       [&b, &overlapped, &calibration, exposed] { *exposed = shardedStep(b, overlapped, calibration.seconds); },
       countWrong, [exposed] { return *exposed; }, [&overlapped] { return overlapped.lastStepBuckets(); }});
}

void printPerRank(const std::vector<Row>& rows) {
  std::printf(
      "#\n# per rank, each sharded row against the replicated row of its buckets (shard_fused vs fused, "
      "shard_overlap vs overlap)\n");
  std::printf("# %-14s %7s %7s %14s %16s %10s %11s %14s %14s\n", "mode", "bucket", "first", "sent/step(B)",
              "opt.state(B)", "time(ms)", "exposed(ms)", "sent ratio", "time ratio");
  for (const Row& r : rows) {
    if (r.wireBytes == 0 && r.stateBytes == 0) continue;  // not an averager row
    const bool sharded = r.mode.rfind("shard_", 0) == 0;
    char sent[32] = "-", time[32] = "-", exposed[32] = "-";
    if (sharded) {
      const Row* replicated = nullptr;  // the same mode and buckets, replicated
      for (const Row& other : rows)
        if (other.bucket == r.bucket && other.first == r.first && "shard_" + other.mode == r.mode) replicated = &other;
      if (replicated && replicated->wireBytes > 0)
        std::snprintf(sent, sizeof sent, "%.3f", static_cast<double>(r.wireBytes) / replicated->wireBytes);
      if (replicated) std::snprintf(time, sizeof time, "%.3f", r.seconds / replicated->seconds);
    }
    if (r.exposed >= 0) std::snprintf(exposed, sizeof exposed, "%.3f", r.exposed * 1e3);
    std::printf("  %-14s %7s %7s %14zu %16zu %10.3f %11s %14s %14s\n", r.mode.c_str(), r.bucket.c_str(),
                r.first.c_str(), r.wireBytes, r.stateBytes, r.seconds * 1e3, exposed, sent, time);
  }
  std::printf(
      "# sent/step: bytes each rank sends per step by the ring's count (all-reduce 2(n-1)/n S; "
      "reduce-scatter + all-gather the same, S padded to n blocks); opt.state: SGD momentum, a float32 per "
      "parameter the rank updates (the largest rank's). shard_overlap's step includes a simulated forward "
      "half as long as the backward (overlap has none): compare their exposed times.\n");
}

}  // namespace fusion_perf
