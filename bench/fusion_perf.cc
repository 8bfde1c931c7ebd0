// fusion_perf: averaging a real model's gradients (ResNet-50: 161 float32 tensors, 25,557,032
// parameters), on host buffers or (--device gpu) device buffers, against baselines in the same run:
//   mpi_total      MPI_Allreduce (MPI_SUM, in place) of one buffer of the model's size (host only:
//                  this Open MPI is not CUDA-aware)
//   ring_total     ringsync Communicator::allreduce (avg) of that one buffer
//   per_tensor     one ringsync all-reduce per gradient tensor (161 calls)
//   fused          GradientAverager, every gradient marked, then synchronize() (no overlap)
//   overlap        GradientAverager with overlap, gradients marked during a simulated backward
//                  (sleeps, so the CPU is free as it is while a GPU computes) as long as `fused`
//                  takes; "exposed" is the time the caller then still waits in synchronize()
//   shard_fused    --shard: ShardedGradientAverager, the whole step without overlap: every
//                  gradient marked, synchronize() (reduce-scatters), every shard "updated" (a copy
//                  of the averaged shard into the parameters), gatherParameters() (all-gathers)
//   shard_overlap  --shard: the same with overlap: the backward of `overlap`, then a simulated
//                  forward (half as long) that waits for each parameter before "using" it;
//                  "exposed" is the time blocked in synchronize() and in those waits
// --shard adds a per-rank table: bytes each rank sends per step (the ring's count), the optimizer
// state each rank holds (SGD momentum: a float per parameter it updates) and the step time, each
// against the replicated averager of the same buckets.
// Every case is checked once (#wrong; the exit status is non-zero if any value is wrong), then all
// are timed round-robin; --breakdown then prints, per averager case, where each bucket's time went
// (GradientAverager::lastStepBuckets(): queued, pack, exchange, unpack; mean over the ranks, median
// of --iters more steps); each time is the slowest rank's, the median of --iters rounds after
// --warmup. Only rank 0 prints. Memory and streams come from the bench harness (perf_buffers.h).
#include <CLI/CLI.hpp>

#include <thread>

#include "fusion_bench.h"
#include "resnet50_model.h"

using namespace fusion_perf;

namespace {

// Checks every case once on fresh inputs, then times them round-robin (iteration k runs every
// case once), so that the machine's drifting load falls on all of them alike.
void measureAll(const Settings& s, std::vector<Case>& cases, bool& warmingUp) {
  warmingUp = true;
  for (Case& c : cases) {
    c.prepare();
    c.step();
    c.row.wrong = c.countWrong();
  }
  std::vector<std::vector<double>> times(cases.size()), exposures(cases.size());
  for (int k = 0; k < s.warmup + s.iters; ++k) {
    warmingUp = k < s.warmup;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const double t = timeOnce(cases[i].step);
      const double e = cases[i].exposed ? slowestRank(cases[i].exposed()) : -1;
      if (k < s.warmup) continue;
      times[i].push_back(t);
      exposures[i].push_back(e);
    }
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].row.seconds = median(times[i]);
    cases[i].row.exposed = median(exposures[i]);
  }
}

// --- the modes -----------------------------------------------------------------------------------
// One buffer of the model's total size: MPI_Allreduce (MPI_SUM; host memory only) and ringsync's
// all-reduce (avg).
void addTotals(const Settings& s, Bench& b, std::vector<Case>& cases) {
  const bool device = s.device == "gpu";
  const int n = b.comm.size();
  if (!device) {
    Gradients& flat = *b.flats.emplace_back(
        std::make_unique<Gradients>(std::vector<std::size_t>{b.grads.total()}, false, false));
    const GradientBuffer g = flat.buffers()[0];
    cases.push_back(
        {{"mpi_total"},
         [&b, &flat] { flat.fill(b.comm.rank(), b.comm.size()); },
         [g] { MPI_Allreduce(MPI_IN_PLACE, g.data, static_cast<int>(g.count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
         [&flat, n] { return flat.countWrong(ReduceOp::kSum, n); },
         {}});
  }
  Gradients& flat = *b.flats.emplace_back(
      std::make_unique<Gradients>(std::vector<std::size_t>{b.grads.total()}, false, device));
  const GradientBuffer g = flat.buffers()[0];
  cases.push_back({{"ring_total"},
                   [&b, &flat] { flat.fill(b.comm.rank(), b.comm.size()); },
                   [&b, g] {
                     b.comm.allreduce(g.data, g.data, g.count, g.type, ReduceOp::kAvg, b.stream.stream());
                     b.stream.synchronize();
                   },
                   [&flat, n] { return flat.countWrong(ReduceOp::kAvg, n); },
                   {}});
}

// The gradients hold the average after any of the remaining cases, and averaging an average
// leaves it unchanged, so they share one set of gradients.
void addPerTensor(Bench& b, std::vector<Case>& cases) {
  Row row{"per_tensor"};
  row.buckets = b.grads.buffers().size();
  cases.push_back({row,
                   [&b] { b.grads.fill(b.comm.rank(), b.comm.size()); },
                   [&b] {
                     const auto& g = b.grads.buffers();
                     for (std::size_t i = g.size(); i-- > 0;)
                       b.comm.allreduce(g[i].data, g[i].data, g[i].count, g[i].type, ReduceOp::kAvg, b.stream.stream());
                     b.stream.synchronize();
                   },
                   [&b] { return b.grads.countWrong(ReduceOp::kAvg, b.comm.size()); },
                   {}});
}

// Backward lasts as long as the fused averaging (median of its warm-up runs, unless --backward-ms),
// spread over the tensors in proportion to their size and produced last to first on the bench's
// stream, the same schedule on every rank; each gradient is marked ready as it is made.
Calibration& addFusedPair(const Settings& s, Bench& b, std::vector<Case>& cases, double bucket, double first) {
  GradientAveragerOptions options;
  options.bucketBytes = toBytes(bucket);
  options.firstBucketBytes = toBytes(first);
  options.compressFp16 = s.compress;
  options.overlap = false;
  GradientAverager& fused = *b.averagers.emplace_back(
      std::make_unique<GradientAverager>(b.comm, b.grads.buffers(), options));
  options.overlap = true;
  GradientAverager& overlapped = *b.averagers.emplace_back(
      std::make_unique<GradientAverager>(b.comm, b.grads.buffers(), options));
  Calibration& calibration = *b.calibrations.emplace_back(std::make_unique<Calibration>());
  calibration.seconds = s.backwardMs / 1e3;
  const bool calibrate = s.backwardMs <= 0;
  auto prepare = [&b] { b.grads.fill(b.comm.rank(), b.comm.size()); };
  auto countWrong = [&b] { return b.grads.countWrong(ReduceOp::kAvg, b.comm.size()); };
  auto markAll = [&b](GradientAverager& averager, double backward) {
    simulateBackward(b.grads, backward, [&](std::size_t i) { averager.markReady(i, b.stream.stream()); });
    averager.synchronize();
  };
  Row row{"fused", mib(bucket), mib(first), fused.bucketCount()};
  row.wireBytes = fused.stats().wireBytesPerStep;
  row.stateBytes = b.grads.total() * sizeof(float);  // every rank updates every parameter
  cases.push_back({row,
                   prepare,
                   [&b, &fused, &calibration, calibrate, markAll] {
                     const auto start = Clock::now();
                     markAll(fused, 0);
                     if (!calibrate || !b.warmingUp) return;
                     calibration.samples.push_back(
                         slowestRank(std::chrono::duration<double>(Clock::now() - start).count()));
                     calibration.seconds = median(calibration.samples);
                   },
                   countWrong,
                   {},
                   [&fused] { return fused.lastStepBuckets(); }});
  row.mode = overlapped.overlapping() ? "overlap" : "overlap(off!)";
  row.buckets = overlapped.bucketCount();
  cases.push_back({row, prepare, [&overlapped, &calibration, markAll] { markAll(overlapped, calibration.seconds); },
                   countWrong, [&overlapped] { return overlapped.stats().lastSynchronizeSeconds; },
                   [&overlapped] { return overlapped.lastStepBuckets(); }});
  return calibration;
}

// --- where the time goes (--breakdown) -------------------------------------------------------------
// Per bucket: each phase's time averaged over the ranks (so that the phases of a step add up to at
// most its time), the median over --iters steps.
void printBreakdown(const Settings& s, const Case& c, int ranks, bool print) {
  const int phases = 4;  // queued, pack, exchange, unpack
  std::vector<std::vector<double>> samples;
  std::vector<BucketTiming> last;
  std::vector<double> stepTimes;
  for (int k = 0; k < s.iters; ++k) {
    stepTimes.push_back(timeOnce(c.step));
    last = c.lastStep();  // a sharded case: its reduce-scatters, then its gathers
    std::vector<double> mine(last.size() * phases), summed(last.size() * phases);
    samples.resize(mine.size());
    for (std::size_t b = 0; b < last.size(); ++b) {
      mine[b * phases + 0] = last[b].queuedSeconds;
      mine[b * phases + 1] = last[b].packSeconds;
      mine[b * phases + 2] = last[b].exchangeSeconds;
      mine[b * phases + 3] = last[b].unpackSeconds;
    }
    MPI_Allreduce(mine.data(), summed.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (std::size_t i = 0; i < mine.size(); ++i) samples[i].push_back(summed[i] / ranks);
  }
  if (last.empty() || !print) return;
  std::printf("#\n# breakdown: %s, bucket %s first %s (ms; mean over the ranks, median of %d steps)\n",
              c.row.mode.c_str(), c.row.bucket.c_str(), c.row.first.c_str(), s.iters);
  std::printf("# %6s %10s %5s %-14s %-10s %9s %8s %9s %8s %10s\n", "bucket", "bytes", "grads", "collective", "path",
              "queued", "pack", "exchange", "unpack", "busbw(GB/s)");
  double sums[phases] = {0, 0, 0, 0};
  for (std::size_t b = 0; b < last.size(); ++b) {
    double phase[phases];
    for (int p = 0; p < phases; ++p) {
      phase[p] = median(samples[b * phases + p]);
      sums[p] += phase[p];
    }
    // nccl-tests' bus factors: 2(n-1)/n for an all-reduce, (n-1)/n for a reduce-scatter or all-gather.
    const bool half = std::string(last[b].collective) != "all-reduce";
    const double busFactor = ranks > 1 ? (half ? 1.0 : 2.0) * (ranks - 1) / ranks : 0.0;
    const double busbw = phase[2] > 0 ? static_cast<double>(last[b].bytes) / phase[2] / 1e9 * busFactor : 0;
    std::printf("  %6zu %10zu %5zu %-14s %-10s %9.3f %8.3f %9.3f %8.3f %10.2f\n", b, last[b].bytes, last[b].gradients,
                last[b].collective, last[b].path, phase[0] * 1e3, phase[1] * 1e3, phase[2] * 1e3, phase[3] * 1e3,
                busbw);
  }
  std::printf(
      "# total: step %.3f ms = pack %.3f + exchange %.3f + unpack %.3f + the rest %.3f (waiting for backward, "
      "the caller's thread; the step is the slowest rank's)\n",
      median(stepTimes) * 1e3, sums[1] * 1e3, sums[2] * 1e3, sums[3] * 1e3,
      (median(stepTimes) - sums[1] - sums[2] - sums[3]) * 1e3);
}

std::vector<Row> runAll(const Settings& s, Communicator& comm, Gradients& grads, bench::PerfStream& stream) {
  Bench b{comm, grads, stream, {}, {}, {}, {}, true, nullptr, nullptr};
  std::vector<Case> cases;
  addTotals(s, b, cases);
  addPerTensor(b, cases);
  for (double bucket : s.bucketMiB)
    for (double first : s.firstBucketMiB) {
      Calibration& calibration = addFusedPair(s, b, cases, bucket, first);
      if (s.shard) addShardedPair(s, b, cases, calibration, bucket, first);
    }
  measureAll(s, cases, b.warmingUp);
  if (s.breakdown)
    for (const Case& c : cases)
      if (c.lastStep) printBreakdown(s, c, comm.size(), comm.rank() == 0);
  std::vector<Row> rows;
  for (const Case& c : cases) rows.push_back(c.row);
  return rows;
}

const Row* findRow(const std::vector<Row>& rows, const std::string& mode) {
  for (const Row& r : rows)
    if (r.mode == mode) return &r;
  return nullptr;
}

void print(const std::vector<Row>& rows, const Settings& s, std::size_t total, int n) {
  const double bytes = static_cast<double>(total) * sizeof(float);
  const double busFactor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  std::printf("#\n# %-14s %7s %7s %8s %10s %10s %10s %11s %7s\n", "mode", "bucket", "first", "buckets", "time(ms)",
              "algbw", "busbw", "exposed(ms)", "#wrong");
  std::printf("# %-14s %7s %7s %8s %10s %10s %10s %11s %7s\n", "", "", "", "", "", "(GB/s)", "(GB/s)", "", "");
  for (const Row& r : rows) {
    const double algbw = bytes / r.seconds / 1e9;
    char exposed[32] = "-";
    if (r.exposed >= 0) std::snprintf(exposed, sizeof exposed, "%.3f", r.exposed * 1e3);
    std::printf("  %-14s %7s %7s %8zu %10.3f %10.2f %10.2f %11s %7zu\n", r.mode.c_str(), r.bucket.c_str(),
                r.first.c_str(), r.buckets, r.seconds * 1e3, algbw, algbw * busFactor, exposed, r.wrong);
  }
  // Fusion pays off when it beats per-tensor calls, costs little against one all-reduce of the
  // same bytes, and hides most of its time behind the backward pass: the ratios, for every
  // fused/overlap pair of the sweep.
  const Row* mpi = findRow(rows, "mpi_total");
  const Row* ring = findRow(rows, "ring_total");
  const Row* perTensor = findRow(rows, "per_tensor");
  std::printf(
      "#\n# ratios (targets: per_tensor/fused >= 5x; fused busbw >= 90%% of one all-reduce of the same size; "
      "exposed <= 50%% of fused)\n");
  for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
    if (rows[i].mode != "fused") continue;
    const Row& fused = rows[i];
    std::printf("#   bucket %s first %s: per_tensor/fused = %.2fx, fused/ring_total busbw = %.0f%%",
                fused.bucket.c_str(), fused.first.c_str(), perTensor->seconds / fused.seconds,
                100 * ring->seconds / fused.seconds);
    if (mpi) std::printf(", fused/mpi_total busbw = %.0f%%", 100 * mpi->seconds / fused.seconds);
    std::printf(", exposed/fused = %.0f%%\n", 100 * rows[i + 1].exposed / fused.seconds);
  }
  std::printf("# warmup %d, iters %d, medians of the slowest rank; %s gradients in %s memory%s\n", s.warmup, s.iters,
              s.arena ? "arena" : "separate", s.device == "gpu" ? "device" : "host",
              s.compress ? ", fp16 on the wire" : "");
}

// The model's tensor sizes, each divided by --scale-down (at least one element).
std::vector<std::size_t> tensorCounts(const std::vector<bench::Tensor>& model, std::size_t scaleDown) {
  std::vector<std::size_t> counts;
  for (const bench::Tensor& t : model) counts.push_back(std::max<std::size_t>(1, t.count() / scaleDown));
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  Settings s;
  CLI::App app{"fusion_perf: ResNet-50 gradient averaging, per tensor vs fused vs fused + overlapped"};
  app.add_option("-w,--warmup", s.warmup, "warm-up rounds")->check(CLI::NonNegativeNumber);
  app.add_option("-n,--iters", s.iters, "timed rounds (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mib", s.bucketMiB, "bucket sizes to sweep, MiB")->delimiter(',');
  app.add_option("--first-bucket-mib", s.firstBucketMiB, "first bucket sizes to sweep, MiB")->delimiter(',');
  app.add_option("--device", s.device, "where the gradients live")->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_flag("--arena", s.arena, "gradients back to back in one buffer (buckets then all-reduce in place)");
  app.add_flag("--compress", s.compress, "fp16 on the wire (host buffers)");
  app.add_option("--backward-ms", s.backwardMs, "simulated backward duration (default: the fused time)");
  app.add_option("--scale-down", s.scaleDown, "divide every tensor's size by this")->check(CLI::PositiveNumber);
  app.add_flag("--list-shapes", s.listShapes, "print the model's tensors and exit");
  app.add_flag("--breakdown", s.breakdown, "per bucket of every averager case: queued, pack, exchange, unpack");
  app.add_flag("--shard", s.shard,
               "also the sharded cases (ShardedGradientAverager: reduce-scatter, shard update, all-gather) and the "
               "per-rank table: bytes sent, optimizer state, step time");
  CLI11_PARSE(app, argc, argv);

  const std::vector<bench::Tensor> model = bench::resnet50();
  std::size_t total = 0;
  for (const bench::Tensor& t : model) total += t.count();
  if (model.size() != 161 || total != 25557032) {
    std::fprintf(stderr, "fusion_perf: the ResNet-50 table is wrong (%zu tensors, %zu parameters)\n", model.size(),
                 total);
    return 1;
  }
  Communicator comm(MPI_COMM_WORLD);
  if (s.listShapes) {
    for (const bench::Tensor& t : model)
      if (comm.rank() == 0) std::printf("%-32s %zu\n", t.name.c_str(), t.count());
    return 0;
  }
  const bool device = s.device == "gpu";
  const std::string whyNot = device ? bench::useDevice(comm.cudaDevice()) : "";
  if (slowestRank(whyNot.empty() ? 0.0 : 1.0) > 0) {  // every rank needs its GPU
    if (comm.rank() == 0) std::fprintf(stderr, "fusion_perf: --device gpu: %s\n", whyNot.c_str());
    return 2;
  }
  auto stream = device ? bench::makeDeviceStream() : bench::makeHostStream();
  Gradients grads(tensorCounts(model, s.scaleDown), s.arena, device);
  if (comm.rank() == 0)
    std::printf(
        "# fusion_perf: ResNet-50%s, %zu float32 gradient tensors, %zu parameters (%.1f MB) in %s memory, "
        "%d ranks, MPI thread level %s\n# %s\n",
        s.scaleDown > 1 ? (" scaled down " + std::to_string(s.scaleDown) + "x").c_str() : "", model.size(),
        grads.total(), static_cast<double>(grads.total()) * 4 / 1e6, device ? "device" : "host", comm.size(),
        threadLevelName(comm.mpiThreadLevel()), comm.options().describe().c_str());
  const std::vector<Row> rows = runAll(s, comm, grads, *stream);
  std::size_t wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (comm.rank() == 0) print(rows, s, grads.total(), comm.size());
  if (comm.rank() == 0 && s.shard) printPerRank(rows);
  const bool anyWrong = slowestRank(static_cast<double>(wrong)) > 0;
  if (anyWrong && comm.rank() == 0) std::printf("# FAILED: wrong values\n");
  return anyWrong ? 1 : 0;
}
