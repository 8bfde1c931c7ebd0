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

// Median over iterations of the slowest rank's time of `step`; `exposed` (if given) likewise.
template <typename Step> Row measure(const Settings& s, Row row, Step&& step, const std::function<double()>& exposed = {}) {
  std::vector<double> times, exposures;
  for (int k = 0; k < s.warmup + s.iters; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    step();
    const double t = slowestRank(std::chrono::duration<double>(Clock::now() - start).count());
    const double e = exposed ? slowestRank(exposed()) : -1;
    if (k >= s.warmup) {
      times.push_back(t);
      exposures.push_back(e);
    }
  }
  row.seconds = median(times);
  row.exposed = exposed ? median(exposures) : -1;
  return row;
}

std::string mib(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%gM", value);
  return text;
}

std::size_t toBytes(double mebibytes) { return static_cast<std::size_t>(mebibytes * 1024 * 1024); }

// --- the modes -----------------------------------------------------------------------------------
// One buffer of the model's total size: MPI_Allreduce and ringsync's all-reduce, side by side.
void runTotals(const Settings& s, Communicator& comm, std::size_t total, std::vector<Row>& rows) {
  const int rank = comm.rank(), n = comm.size();
  std::vector<float> flat(total);
  auto fill = [&] {
    for (std::size_t j = 0; j < flat.size(); ++j) flat[j] = static_cast<float>(rank + j % 7);
  };
  auto countWrong = [&](float scale, float base) {
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < flat.size(); ++j) wrong += flat[j] != base + scale * static_cast<float>(j % 7);
    return wrong;
  };
  auto mpiSum = [&] {
    MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(flat.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  Row mpi = measure(s, {"mpi_total"}, mpiSum);
  // Timed repeats of MPI_SUM grow the values, so the check is one more call on fresh inputs.
  fill();
  mpiSum();
  mpi.wrong = countWrong(static_cast<float>(n), static_cast<float>(n * (n - 1) / 2));
  rows.push_back(mpi);

  fill();
  Row ring = measure(s, {"ring_total"}, [&] {
    comm.allreduce(flat.data(), flat.data(), flat.size(), DataType::kFloat32, ReduceOp::kAvg);
  });
  ring.wrong = countWrong(1.0f, (n - 1) / 2.0f);
  rows.push_back(ring);
}

Row runPerTensor(const Settings& s, Communicator& comm, Gradients& grads) {
  grads.fill(comm.rank());
  const auto& b = grads.buffers();
  Row row = measure(s, {"per_tensor"}, [&] {
    for (std::size_t g = b.size(); g-- > 0;) comm.allreduce(b[g].data, b[g].data, b[g].count, b[g].type, ReduceOp::kAvg);
  });
  row.wrong = grads.countWrong(comm.size(), false);
  row.buckets = b.size();
  return row;
}

Row runFused(const Settings& s, Communicator& comm, Gradients& grads, GradientAveragerOptions options, Row row) {
  options.overlap = false;
  grads.fill(comm.rank());
  GradientAverager averager(comm, grads.buffers(), options);
  row.buckets = averager.bucketCount();
  row = measure(s, row, [&] { averager.averageAll(); });
  row.wrong = grads.countWrong(comm.size(), false);
  return row;
}

// Backward lasts `backward` seconds, spread over the tensors in proportion to their size and
// produced last to first, the same schedule on every rank; each gradient is marked as it is made.
Row runOverlapped(const Settings& s, Communicator& comm, Gradients& grads, GradientAveragerOptions options, Row row,
                  double backward) {
  options.overlap = true;
  grads.fill(comm.rank());
  GradientAverager averager(comm, grads.buffers(), options);
  row.buckets = averager.bucketCount();
  const auto& b = grads.buffers();
  auto step = [&] {
    const auto start = Clock::now();
    std::size_t done = 0;
    for (std::size_t g = b.size(); g-- > 0;) {
      done += b[g].count;
      const double at = backward * static_cast<double>(done) / static_cast<double>(grads.total());
      std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
      averager.markReady(g);
    }
    averager.synchronize();
  };
  row = measure(s, row, step, [&] { return averager.stats().lastSynchronizeSeconds; });
  row.wrong = grads.countWrong(comm.size(), false);
  if (!averager.overlapping()) row.mode = "overlap(off!)";
  return row;
}

std::vector<Row> runAll(const Settings& s, Communicator& comm, Gradients& grads) {
  std::vector<Row> rows;
  runTotals(s, comm, grads.total(), rows);
  rows.push_back(runPerTensor(s, comm, grads));
  for (double bucket : s.bucketMiB)
    for (double first : s.firstBucketMiB) {
      GradientAveragerOptions options;
      options.bucketBytes = toBytes(bucket);
      options.firstBucketBytes = toBytes(first);
      options.compressFp16 = s.compress;
      const Row fused = runFused(s, comm, grads, options, {"fused", mib(bucket), mib(first)});
      rows.push_back(fused);
      const double backward = s.backwardMs > 0 ? s.backwardMs / 1e3 : fused.seconds;
      rows.push_back(runOverlapped(s, comm, grads, options, {"overlap", mib(bucket), mib(first)}, backward));
    }
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
    if (r.exposed >= 0) std::snprintf(exposed, sizeof exposed, "%.2f", r.exposed * 1e3);
    std::printf("  %-14s %7s %7s %8zu %10.2f %10.2f %10.2f %11s %7zu\n", r.mode.c_str(), r.bucket.c_str(),
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
