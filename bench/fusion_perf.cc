// fusion_perf: averaging a real model's gradients (ResNet-50: 161 float32 tensors, 25,557,032
// parameters) on host buffers, measured against MPI_Allreduce in the same run:
//   mpi_total      MPI_Allreduce (MPI_SUM, in place) of one buffer of the model's total size
//   ring_total     ringsync Communicator::allreduce (avg) of that one buffer
//   per_tensor     one ringsync all-reduce per gradient tensor (161 calls)
//   fused          GradientAverager, every gradient marked, then synchronize() (no overlap)
//   overlap        GradientAverager with overlap, gradients marked during a simulated backward
//                  (sleeps, so the CPU is free as it is while a GPU computes) as long as `fused`
//                  takes; "exposed" is the time the caller then still waits in synchronize()
// Every time is the slowest rank's, the median of --iters runs after --warmup. Each mode is checked
// once (#wrong); the exit status is non-zero if any value is wrong. Only rank 0 prints.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringsync/ringsync.h"

using namespace ringsync;
using Clock = std::chrono::steady_clock;

namespace {

// --- the model -----------------------------------------------------------------------------------
struct Tensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::size_t count() const {
    std::size_t c = 1;
    for (std::size_t d : shape) c *= d;
    return c;
  }
};

// torchvision's resnet50 parameters in registration order (model.parameters()):
//   conv1.weight [64,3,7,7], bn1.{weight,bias} [64]
//   layer1..layer4: 3, 4, 6, 3 Bottleneck blocks of width w = 64, 128, 256, 512, each
//     conv1 [w,in,1,1] bn1 [w]x2, conv2 [w,w,3,3] bn2 [w]x2, conv3 [4w,w,1,1] bn3 [4w]x2
//     and in the first block of a stage downsample.0 [4w,in,1,1], downsample.1 [4w]x2
//     (in = 64 for layer1's first block, otherwise the previous block's 4w)
//   fc.weight [1000,2048], fc.bias [1000]
// 161 tensors, 25,557,032 parameters (checked in main).
std::vector<Tensor> resnet50() {
  std::vector<Tensor> t;
  auto bn = [&](const std::string& name, std::size_t c) {
    t.push_back({name + ".weight", {c}});
    t.push_back({name + ".bias", {c}});
  };
  t.push_back({"conv1.weight", {64, 3, 7, 7}});
  bn("bn1", 64);
  const std::size_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  std::size_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const std::size_t w = widths[stage];
    for (std::size_t b = 0; b < blocks[stage]; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      t.push_back({p + ".conv1.weight", {w, in, 1, 1}});
      bn(p + ".bn1", w);
      t.push_back({p + ".conv2.weight", {w, w, 3, 3}});
      bn(p + ".bn2", w);
      t.push_back({p + ".conv3.weight", {4 * w, w, 1, 1}});
      bn(p + ".bn3", 4 * w);
      if (b == 0) {
        t.push_back({p + ".downsample.0.weight", {4 * w, in, 1, 1}});
        bn(p + ".downsample.1", 4 * w);
      }
      in = 4 * w;
    }
  }
  t.push_back({"fc.weight", {1000, 2048}});
  t.push_back({"fc.bias", {1000}});
  return t;
}

// --- gradients -----------------------------------------------------------------------------------
// One buffer per tensor (as a framework's allocator gives them), or --arena: back to back in one.
class Gradients {
 public:
  Gradients(const std::vector<Tensor>& model, bool arena, std::size_t scaleDown) {
    std::vector<std::size_t> counts;
    for (const Tensor& t : model) counts.push_back(std::max<std::size_t>(1, t.count() / scaleDown));
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    if (arena) arena_.assign(total, 0.0f);
    separate_.reserve(model.size());
    std::size_t offset = 0;
    for (std::size_t c : counts) {
      float* data = arena ? arena_.data() + offset : separate_.emplace_back(c, 0.0f).data();
      buffers_.push_back({data, c, DataType::kFloat32});
      offset += c;
    }
    total_ = total;
  }
  // x = rank + j % 7 (j = position in the model): the average (n-1)/2 + j % 7 is exact, and
  // averaging it again leaves it unchanged, so repeated runs stay checkable.
  void fill(int rank) {
    std::size_t j = 0;
    for (const GradientBuffer& b : buffers_)
      for (std::size_t i = 0; i < b.count; ++i, ++j) static_cast<float*>(b.data)[i] = static_cast<float>(rank + j % 7);
  }
  std::size_t countWrong(int ranks, bool summedOnce) const {
    std::size_t j = 0, wrong = 0;
    const float base = summedOnce ? static_cast<float>(ranks * (ranks - 1) / 2) : (ranks - 1) / 2.0f;
    for (const GradientBuffer& b : buffers_)
      for (std::size_t i = 0; i < b.count; ++i, ++j) {
        const float want = base + static_cast<float>(j % 7) * (summedOnce ? static_cast<float>(ranks) : 1.0f);
        wrong += static_cast<const float*>(b.data)[i] != want;
      }
    return wrong;
  }
  const std::vector<GradientBuffer>& buffers() const { return buffers_; }
  std::size_t total() const { return total_; }

 private:
  std::vector<float> arena_;
  std::vector<std::vector<float>> separate_;
  std::vector<GradientBuffer> buffers_;
  std::size_t total_ = 0;
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
  std::vector<double> bucketMiB{4};
  std::vector<double> firstBucketMiB{1};
  bool arena = false;
  bool compress = false;
  double backwardMs = 0;  // 0: as long as `fused` takes
  bool listShapes = false;
  std::size_t scaleDown = 1;  // divide every tensor's size by this (the latency-bound regime)
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

// State the cases share: the gradients, two flat buffers of the model's size, the averagers.
struct Bench {
  Communicator& comm;
  Gradients& grads;
  std::vector<float> flatMpi, flatRing;
  std::vector<std::unique_ptr<GradientAverager>> averagers;
  std::vector<std::unique_ptr<Calibration>> calibrations;
  bool warmingUp = true;  // the simulated backward's length is calibrated until warm-up ends
};

void fillFlat(std::vector<float>& flat, int rank) {
  for (std::size_t j = 0; j < flat.size(); ++j) flat[j] = static_cast<float>(rank + j % 7);
}

std::size_t flatWrong(const std::vector<float>& flat, float base, float scale) {
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < flat.size(); ++j) wrong += flat[j] != base + scale * static_cast<float>(j % 7);
  return wrong;
}

// One buffer of the model's total size: MPI_Allreduce (MPI_SUM) and ringsync's all-reduce (avg).
void addTotals(Bench& b, std::vector<Case>& cases) {
  const int rank = b.comm.rank(), n = b.comm.size();
  b.flatMpi.resize(b.grads.total());
  b.flatRing.resize(b.grads.total());
  cases.push_back({{"mpi_total"}, [&b, rank] { fillFlat(b.flatMpi, rank); },
                   [&b] {
                     MPI_Allreduce(MPI_IN_PLACE, b.flatMpi.data(), static_cast<int>(b.flatMpi.size()), MPI_FLOAT,
                                   MPI_SUM, MPI_COMM_WORLD);
                   },
                   [&b, n] { return flatWrong(b.flatMpi, static_cast<float>(n * (n - 1) / 2), static_cast<float>(n)); },
                   {}});
  cases.push_back({{"ring_total"}, [&b, rank] { fillFlat(b.flatRing, rank); },
                   [&b] {
                     b.comm.allreduce(b.flatRing.data(), b.flatRing.data(), b.flatRing.size(), DataType::kFloat32,
                                      ReduceOp::kAvg);
                   },
                   [&b, n] { return flatWrong(b.flatRing, (n - 1) / 2.0f, 1.0f); }, {}});
}

// The gradients hold the average after any of the remaining cases, and averaging an average
// leaves it unchanged, so they share one set of gradients.
void addPerTensor(Bench& b, std::vector<Case>& cases) {
  Row row{"per_tensor"};
  row.buckets = b.grads.buffers().size();
  cases.push_back({row, [&b] { b.grads.fill(b.comm.rank()); },
                   [&b] {
                     const auto& g = b.grads.buffers();
                     for (std::size_t i = g.size(); i-- > 0;)
                       b.comm.allreduce(g[i].data, g[i].data, g[i].count, g[i].type, ReduceOp::kAvg);
                   },
                   [&b] { return b.grads.countWrong(b.comm.size(), false); }, {}});
}

// Backward lasts as long as the fused averaging (median of its warm-up runs, unless --backward-ms),
// spread over the tensors in proportion to their size and produced last to first, the same
// schedule on every rank; each gradient is marked ready as it is made.
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
  double& backward = calibration.seconds;
  auto prepare = [&b] { b.grads.fill(b.comm.rank()); };
  auto countWrong = [&b] { return b.grads.countWrong(b.comm.size(), false); };
  Row row{"fused", mib(bucket), mib(first), fused.bucketCount()};
  cases.push_back({row, prepare,
                   [&b, &fused, &calibration, calibrate] {
                     const auto start = Clock::now();
                     fused.averageAll();
                     if (!calibrate || !b.warmingUp) return;
                     calibration.samples.push_back(slowestRank(std::chrono::duration<double>(Clock::now() - start).count()));
                     calibration.seconds = median(calibration.samples);
                   },
                   countWrong, {}});
  row.mode = overlapped.overlapping() ? "overlap" : "overlap(off!)";
  row.buckets = overlapped.bucketCount();
  cases.push_back({row, prepare,
                   [&b, &overlapped, &backward] {
                     const auto& g = b.grads.buffers();
                     const auto start = Clock::now();
                     std::size_t done = 0;
                     for (std::size_t i = g.size(); i-- > 0;) {
                       done += g[i].count;
                       const double at = backward * static_cast<double>(done) / static_cast<double>(b.grads.total());
                       std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
                       overlapped.markReady(i);
                     }
                     overlapped.synchronize();
                   },
                   countWrong, [&overlapped] { return overlapped.stats().lastSynchronizeSeconds; }});
}

std::vector<Row> runAll(const Settings& s, Communicator& comm, Gradients& grads) {
  Bench b{comm, grads, {}, {}, {}, {}, true};
  std::vector<Case> cases;
  addTotals(b, cases);
  addPerTensor(b, cases);
  for (double bucket : s.bucketMiB)
    for (double first : s.firstBucketMiB) addFusedPair(s, b, cases, bucket, first);
  measureAll(s, cases, b.warmingUp);
  std::vector<Row> rows;
  for (const Case& c : cases) rows.push_back(c.row);
  return rows;
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
  // The targets, from the first fused/overlap pair (and every pair with a sweep).
  const Row* ring = &rows[1];
  const Row* perTensor = &rows[2];
  std::printf("#\n# ratios (targets: per_tensor/fused >= 5x; fused busbw >= 90%% of ring_total; exposed <= 50%% "
              "of fused)\n");
  for (std::size_t i = 3; i + 1 < rows.size(); i += 2)
    std::printf("#   bucket %s first %s: per_tensor/fused = %.2fx, fused/ring_total busbw = %.0f%%, "
                "fused/mpi_total busbw = %.0f%%, exposed/fused = %.0f%%\n",
                rows[i].bucket.c_str(), rows[i].first.c_str(), perTensor->seconds / rows[i].seconds,
                100 * ring->seconds / rows[i].seconds, 100 * rows[0].seconds / rows[i].seconds,
                100 * rows[i + 1].exposed / rows[i].seconds);
  std::printf("# warmup %d, iters %d, medians of the slowest rank; %s gradients%s\n", s.warmup, s.iters,
              s.arena ? "arena" : "separate", s.compress ? ", fp16 on the wire" : "");
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  Settings s;
  CLI::App app{"fusion_perf: ResNet-50 gradient averaging, per tensor vs fused vs fused + overlapped"};
  app.add_option("-w,--warmup", s.warmup, "warm-up runs per mode")->check(CLI::NonNegativeNumber);
  app.add_option("-n,--iters", s.iters, "timed runs per mode (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mib", s.bucketMiB, "bucket sizes to sweep, MiB")->delimiter(',');
  app.add_option("--first-bucket-mib", s.firstBucketMiB, "first bucket sizes to sweep, MiB")->delimiter(',');
  app.add_flag("--arena", s.arena, "gradients back to back in one buffer (buckets then all-reduce in place)");
  app.add_flag("--compress", s.compress, "fp16 on the wire");
  app.add_option("--backward-ms", s.backwardMs, "simulated backward duration (default: the fused time)");
  app.add_flag("--list-shapes", s.listShapes, "print the model's tensors and exit");
  app.add_option("--scale-down", s.scaleDown, "divide every tensor's size by this (at least 1 element each)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const std::vector<Tensor> model = resnet50();
  std::size_t total = 0;
  for (const Tensor& t : model) total += t.count();
  if (model.size() != 161 || total != 25557032) {
    std::fprintf(stderr, "fusion_perf: the ResNet-50 table is wrong (%zu tensors, %zu parameters)\n", model.size(), total);
    return 1;
  }
  Communicator comm(MPI_COMM_WORLD);
  if (s.listShapes) {
    if (comm.rank() == 0)
      for (const Tensor& t : model) std::printf("%-32s %zu\n", t.name.c_str(), t.count());
    return 0;
  }
  Gradients grads(model, s.arena, s.scaleDown);
  if (comm.rank() == 0)
    std::printf("# fusion_perf: ResNet-50%s, %zu float32 gradient tensors, %zu parameters (%.1f MB), %d ranks, "
                "MPI thread level %s\n# %s\n", s.scaleDown > 1 ? (" scaled down " + std::to_string(s.scaleDown) + "x").c_str() : "",
                model.size(), grads.total(), static_cast<double>(grads.total()) * 4 / 1e6, comm.size(),
                threadLevelName(comm.mpiThreadLevel()), comm.options().describe().c_str());
  const std::vector<Row> rows = runAll(s, comm, grads);
  std::size_t wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (comm.rank() == 0) print(rows, s, grads.total(), comm.size());
  const bool anyWrong = slowestRank(static_cast<double>(wrong)) > 0;
  if (anyWrong && comm.rank() == 0) std::printf("# FAILED: wrong values\n");
  return anyWrong ? 1 : 0;
}
