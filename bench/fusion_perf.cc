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
// Every case is checked once (#wrong; the exit status is non-zero if any value is wrong), then all
// are timed round-robin; --breakdown then prints, per averager case, where each bucket's time went
// (GradientAverager::lastStepBuckets(): queued, pack, exchange, unpack; mean over the ranks, median
// of --iters more steps); each time is the slowest rank's, the median of --iters rounds after
// --warmup. Only rank 0 prints. Memory and streams come from the bench harness (perf_buffers.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "closed_form.h"
#include "perf_buffers.h"
#include "perf_pattern.h"
#include "resnet50_model.h"
#include "ringsync/ringsync.h"

using namespace ringsync;
using Clock = std::chrono::steady_clock;

namespace {

// --- gradients -----------------------------------------------------------------------------------
// Tensors in host or device memory, one allocation each (as a framework's allocator gives them) or
// --arena: back to back in one. A flat host mirror holds the inputs and, after download, results.
class Gradients {
 public:
  Gradients(const std::vector<std::size_t>& counts, bool arena, bool device) {
    auto allocate = [device](std::size_t elements) {
      return device ? bench::makeDeviceMemory(elements * sizeof(float)) : bench::makeHostMemory(elements * sizeof(float));
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
double slowestRank(double seconds) {
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Settings {
  int warmup = 2;
  int iters = 10;
  std::vector<double> bucketMiB{1};    // the library defaults (options.h)
  std::vector<double> firstBucketMiB{0.25};
  bool arena = false;
  bool compress = false;
  double backwardMs = 0;  // 0: as long as `fused` takes
  bool listShapes = false;
  bool breakdown = false;
  std::size_t scaleDown = 1;  // divide every tensor's size by this (the latency-bound regime)
  std::string device = "cpu";  // where the gradients live: cpu | gpu
};

struct Row {
  std::string mode;
  std::string bucket = "-", first = "-";
  std::size_t buckets = 0;
  double seconds = 0, exposed = -1;
  std::size_t wrong = 0;
};

// One way of averaging: how to set up fresh inputs, one run, and how many values came out wrong.
struct Case {
  Row row;
  std::function<void()> prepare;
  std::function<void()> step;
  std::function<std::size_t()> countWrong;
  std::function<double()> exposed;  // seconds the caller waited in synchronize(), if it applies
  GradientAverager* averager = nullptr;  // the averager cases' own, for --breakdown
};

double timeOnce(const std::function<void()>& step) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  step();
  return slowestRank(std::chrono::duration<double>(Clock::now() - start).count());
}

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

std::string mib(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%gM", value);
  return text;
}

std::size_t toBytes(double mebibytes) { return static_cast<std::size_t>(mebibytes * 1024 * 1024); }

// --- the modes -----------------------------------------------------------------------------------
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
  std::vector<std::unique_ptr<Calibration>> calibrations;
  bool warmingUp = true;  // the simulated backward's length is calibrated until warm-up ends
};

// One buffer of the model's total size: MPI_Allreduce (MPI_SUM; host memory only) and ringsync's
// all-reduce (avg).
void addTotals(const Settings& s, Bench& b, std::vector<Case>& cases) {
  const bool device = s.device == "gpu";
  const int n = b.comm.size();
  if (!device) {
    Gradients& flat = *b.flats.emplace_back(std::make_unique<Gradients>(std::vector<std::size_t>{b.grads.total()}, false, false));
    const GradientBuffer g = flat.buffers()[0];
    cases.push_back({{"mpi_total"}, [&b, &flat] { flat.fill(b.comm.rank(), b.comm.size()); },
                     [g] { MPI_Allreduce(MPI_IN_PLACE, g.data, static_cast<int>(g.count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
                     [&flat, n] { return flat.countWrong(ReduceOp::kSum, n); }, {}});
  }
  Gradients& flat = *b.flats.emplace_back(std::make_unique<Gradients>(std::vector<std::size_t>{b.grads.total()}, false, device));
  const GradientBuffer g = flat.buffers()[0];
  cases.push_back({{"ring_total"}, [&b, &flat] { flat.fill(b.comm.rank(), b.comm.size()); },
                   [&b, g] {
                     b.comm.allreduce(g.data, g.data, g.count, g.type, ReduceOp::kAvg, b.stream.stream());
                     b.stream.synchronize();
                   },
                   [&flat, n] { return flat.countWrong(ReduceOp::kAvg, n); }, {}});
}

// The gradients hold the average after any of the remaining cases, and averaging an average
// leaves it unchanged, so they share one set of gradients.
void addPerTensor(Bench& b, std::vector<Case>& cases) {
  Row row{"per_tensor"};
  row.buckets = b.grads.buffers().size();
  cases.push_back({row, [&b] { b.grads.fill(b.comm.rank(), b.comm.size()); },
                   [&b] {
                     const auto& g = b.grads.buffers();
                     for (std::size_t i = g.size(); i-- > 0;)
                       b.comm.allreduce(g[i].data, g[i].data, g[i].count, g[i].type, ReduceOp::kAvg, b.stream.stream());
                     b.stream.synchronize();
                   },
                   [&b] { return b.grads.countWrong(ReduceOp::kAvg, b.comm.size()); }, {}});
}

// Backward lasts as long as the fused averaging (median of its warm-up runs, unless --backward-ms),
// spread over the tensors in proportion to their size and produced last to first on the bench's
// stream, the same schedule on every rank; each gradient is marked ready as it is made.
void addFusedPair(const Settings& s, Bench& b, std::vector<Case>& cases, double bucket, double first) {
  GradientAveragerOptions options;
  options.bucketBytes = toBytes(bucket);
  options.firstBucketBytes = toBytes(first);
  options.compressFp16 = s.compress;
  options.overlap = false;
  GradientAverager& fused = *b.averagers.emplace_back(std::make_unique<GradientAverager>(b.comm, b.grads.buffers(), options));
  options.overlap = true;
  GradientAverager& overlapped = *b.averagers.emplace_back(std::make_unique<GradientAverager>(b.comm, b.grads.buffers(), options));
  Calibration& calibration = *b.calibrations.emplace_back(std::make_unique<Calibration>());
  calibration.seconds = s.backwardMs / 1e3;
  const bool calibrate = s.backwardMs <= 0;
  auto prepare = [&b] { b.grads.fill(b.comm.rank(), b.comm.size()); };
  auto countWrong = [&b] { return b.grads.countWrong(ReduceOp::kAvg, b.comm.size()); };
  auto markAll = [&b](GradientAverager& averager, double backward) {
    const auto& g = b.grads.buffers();
    const auto start = Clock::now();
    std::size_t done = 0;
    for (std::size_t i = g.size(); i-- > 0;) {
      done += g[i].count;
      if (backward > 0) {
        const double at = backward * static_cast<double>(done) / static_cast<double>(b.grads.total());
        std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
      }
      averager.markReady(i, b.stream.stream());
    }
    averager.synchronize();
  };
  Row row{"fused", mib(bucket), mib(first), fused.bucketCount()};
  cases.push_back({row, prepare,
                   [&b, &fused, &calibration, calibrate, markAll] {
                     const auto start = Clock::now();
                     markAll(fused, 0);
                     if (!calibrate || !b.warmingUp) return;
                     calibration.samples.push_back(slowestRank(std::chrono::duration<double>(Clock::now() - start).count()));
                     calibration.seconds = median(calibration.samples);
                   },
                   countWrong, {}, &fused});
  row.mode = overlapped.overlapping() ? "overlap" : "overlap(off!)";
  row.buckets = overlapped.bucketCount();
  cases.push_back({row, prepare, [&overlapped, &calibration, markAll] { markAll(overlapped, calibration.seconds); },
                   countWrong, [&overlapped] { return overlapped.stats().lastSynchronizeSeconds; }, &overlapped});
}

// --- where the time goes (--breakdown) -------------------------------------------------------------
// Per bucket: each phase's time averaged over the ranks (so that the phases of a step add up to at
// most its time), the median over --iters steps.
void printBreakdown(const Settings& s, const Case& c, int ranks, bool print) {
  const std::size_t buckets = c.averager->bucketCount();
  const int phases = 4;  // queued, pack, exchange, unpack
  std::vector<std::vector<double>> samples(buckets * phases);
  std::vector<BucketTiming> last;
  std::vector<double> stepTimes;
  for (int k = 0; k < s.iters; ++k) {
    stepTimes.push_back(timeOnce(c.step));
    last = c.averager->lastStepBuckets();
    std::vector<double> mine(buckets * phases), summed(buckets * phases);
    for (std::size_t b = 0; b < buckets; ++b) {
      mine[b * phases + 0] = last[b].queuedSeconds;
      mine[b * phases + 1] = last[b].packSeconds;
      mine[b * phases + 2] = last[b].exchangeSeconds;
      mine[b * phases + 3] = last[b].unpackSeconds;
    }
    MPI_Allreduce(mine.data(), summed.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (std::size_t i = 0; i < mine.size(); ++i) samples[i].push_back(summed[i] / ranks);
  }
  if (last.empty() || !print) return;
  const double busFactor = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
  std::printf("#\n# breakdown: %s, bucket %s first %s (ms; mean over the ranks, median of %d steps)\n", c.row.mode.c_str(),
              c.row.bucket.c_str(), c.row.first.c_str(), s.iters);
  std::printf("# %6s %10s %5s %-10s %9s %8s %9s %8s %10s\n", "bucket", "bytes", "grads", "path", "queued", "pack",
              "exchange", "unpack", "busbw(GB/s)");
  double sums[phases] = {0, 0, 0, 0};
  for (std::size_t b = 0; b < buckets; ++b) {
    double phase[phases];
    for (int p = 0; p < phases; ++p) {
      phase[p] = median(samples[b * phases + p]);
      sums[p] += phase[p];
    }
    const double busbw = phase[2] > 0 ? static_cast<double>(last[b].bytes) / phase[2] / 1e9 * busFactor : 0;
    std::printf("  %6zu %10zu %5zu %-10s %9.3f %8.3f %9.3f %8.3f %10.2f\n", b, last[b].bytes, last[b].gradients,
                last[b].path, phase[0] * 1e3, phase[1] * 1e3, phase[2] * 1e3, phase[3] * 1e3, busbw);
  }
  std::printf("# total: step %.3f ms = pack %.3f + exchange %.3f + unpack %.3f + the rest %.3f (waiting for backward, "
              "the caller's thread; the step is the slowest rank's)\n",
              median(stepTimes) * 1e3, sums[1] * 1e3, sums[2] * 1e3, sums[3] * 1e3,
              (median(stepTimes) - sums[1] - sums[2] - sums[3]) * 1e3);
}

std::vector<Row> runAll(const Settings& s, Communicator& comm, Gradients& grads, bench::PerfStream& stream) {
  Bench b{comm, grads, stream, {}, {}, {}, true};
  std::vector<Case> cases;
  addTotals(s, b, cases);
  addPerTensor(b, cases);
  for (double bucket : s.bucketMiB)
    for (double first : s.firstBucketMiB) addFusedPair(s, b, cases, bucket, first);
  measureAll(s, cases, b.warmingUp);
  if (s.breakdown)
    for (const Case& c : cases)
      if (c.averager != nullptr) printBreakdown(s, c, comm.size(), comm.rank() == 0);
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
  std::printf("#\n# ratios (targets: per_tensor/fused >= 5x; fused busbw >= 90%% of one all-reduce of the same size; "
              "exposed <= 50%% of fused)\n");
  for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
    if (rows[i].mode != "fused") continue;
    const Row& fused = rows[i];
    std::printf("#   bucket %s first %s: per_tensor/fused = %.2fx, fused/ring_total busbw = %.0f%%", fused.bucket.c_str(),
                fused.first.c_str(), perTensor->seconds / fused.seconds, 100 * ring->seconds / fused.seconds);
    if (mpi) std::printf(", fused/mpi_total busbw = %.0f%%", 100 * mpi->seconds / fused.seconds);
    std::printf(", exposed/fused = %.0f%%\n", 100 * rows[i + 1].exposed / fused.seconds);
  }
  std::printf("# warmup %d, iters %d, medians of the slowest rank; %s gradients in %s memory%s\n", s.warmup, s.iters,
              s.arena ? "arena" : "separate", s.device == "gpu" ? "device" : "host", s.compress ? ", fp16 on the wire" : "");
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
  CLI11_PARSE(app, argc, argv);

  const std::vector<bench::Tensor> model = bench::resnet50();
  std::size_t total = 0;
  for (const bench::Tensor& t : model) total += t.count();
  if (model.size() != 161 || total != 25557032) {
    std::fprintf(stderr, "fusion_perf: the ResNet-50 table is wrong (%zu tensors, %zu parameters)\n", model.size(), total);
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
    std::printf("# fusion_perf: ResNet-50%s, %zu float32 gradient tensors, %zu parameters (%.1f MB) in %s memory, "
                "%d ranks, MPI thread level %s\n# %s\n",
                s.scaleDown > 1 ? (" scaled down " + std::to_string(s.scaleDown) + "x").c_str() : "", model.size(),
                grads.total(), static_cast<double>(grads.total()) * 4 / 1e6, device ? "device" : "host", comm.size(),
                threadLevelName(comm.mpiThreadLevel()), comm.options().describe().c_str());
  const std::vector<Row> rows = runAll(s, comm, grads, *stream);
  std::size_t wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (comm.rank() == 0) print(rows, s, grads.total(), comm.size());
  const bool anyWrong = slowestRank(static_cast<double>(wrong)) > 0;
  if (anyWrong && comm.rank() == 0) std::printf("# FAILED: wrong values\n");
  return anyWrong ? 1 : 0;
}
