// libtorch_ddp_trainer: a libtorch MLP or CNN trained on Fashion-MNIST with ringsync, the example
// of <ringsync/torch.h> and its test.
//
//   mpirun -np 3 libtorch_ddp_trainer --check            (CTest: libtorch_ddp_train.np1-3)
//     N ranks each train on 1/N of every batch through DistributedDataParallel and, beside it,
//     the same model trains in the same process on the whole batch; after --steps SGD-momentum
//     steps (zero_grad() at its default) every parameter must be within 1e-5 of the
//     single-process run (max |a-b| / max |b| per tensor) and bit-identical on every rank.
//   mpirun -np 2 libtorch_ddp_trainer --compare          (bench/libtorch_ddp_compare.sh)
//     step time of ddp, per-parameter ringsync::Communicator::allreduce and per-parameter MPI_Allreduce,
//     the three interleaved in rounds in one process, and the share of DDP's communication
//     hidden behind backward.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fashion_mnist.h"
#include "ringsync/ringsync.h"
#include "trainer_options.h"
#include "trainer_replica.h"

namespace ringsync_example {
namespace {

constexpr double kPixelMean = 0.2860;  // Fashion-MNIST's, over the training set, in [0, 1]
constexpr double kPixelStd = 0.3530;
constexpr double kRelativeLimit = 1e-5;

struct Batch {
  ::torch::Tensor x, y;
};

class Data {
 public:
  Data(const Images& images, ::torch::Dtype dtype)
      : x_(((::torch::from_blob(const_cast<std::uint8_t*>(images.pixels.data()),
                                {static_cast<int64_t>(images.count), 1, 28, 28}, ::torch::kUInt8)
                 .to(dtype) /
             255.0) -
            kPixelMean) /
           kPixelStd),
        y_(::torch::from_blob(const_cast<std::uint8_t*>(images.labels.data()), {static_cast<int64_t>(images.count)},
                              ::torch::kUInt8)
               .to(::torch::kLong)) {}
  // Global batch `step` (wrapping around the images read), or this rank's shard of it.
  Batch batch(int64_t step, int64_t size) const {
    const int64_t first = (step * size) % (x_.size(0) / size * size);
    return {x_.narrow(0, first, size), y_.narrow(0, first, size)};
  }
  static Batch shard(const Batch& whole, int rank, int ranks) {
    const int64_t local = whole.x.size(0) / ranks;
    return {whole.x.narrow(0, rank * local, local), whole.y.narrow(0, rank * local, local)};
  }

 private:
  ::torch::Tensor x_, y_;
};

double averageOverRanks(double value, MPI_Comm comm, int ranks) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm);
  return value / ranks;
}

// max |a - b| / max |b| over each tensor, the worst tensor.
double worstRelativeDifference(const std::vector<::torch::Tensor>& a, const std::vector<::torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double scale = b[i].abs().max().item<double>();
    const double diff = (a[i] - b[i]).abs().max().item<double>();
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

// True on every rank when every rank's parameters equal rank 0's bit for bit.
bool replicasIdentical(ringsync::Communicator& comm, const std::vector<::torch::Tensor>& parameters) {
  int same = 1;
  for (const ::torch::Tensor& p : parameters) {
    const ::torch::Tensor rootCopy = p.detach().clone();
    ringsync::torch::broadcast(comm, rootCopy, /*root=*/0);
    same = same && ::torch::equal(rootCopy, p.detach());
  }
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm.mpiComm());
  return same != 0;
}

int runCheck(const TrainerOptions& o, ringsync::Communicator& comm, MPI_Comm mpiComm, const Data& data) {
  const int rank = comm.rank(), ranks = comm.size();
  Replica reference(o.model, o.seed, Sync::kNone, comm, mpiComm);
  // Every rank starts from other weights: only rank 0's may survive the construction.
  Replica replica(o.model, o.seed + 1000 * static_cast<std::uint64_t>(rank), o.sync, comm, mpiComm);
  if (rank == 0)
    std::printf(
        "# libtorch_ddp_trainer --check: %s, %lld parameters, %d ranks, batch %lld (%lld per rank), "
        "gradients averaged by %s, SGD lr %g momentum %g, zero_grad() default (set_to_none)\n"
        "# step   loss(ranks)  loss(one process)\n",
        describeModel(o.model).c_str(), static_cast<long long>(replica.parameterCount()), ranks,
        static_cast<long long>(o.batch), static_cast<long long>(o.batch / ranks), syncName(o.sync),
        o.model.learningRate, o.model.momentum);
  for (int64_t s = 0; s < o.steps; ++s) {
    const Batch whole = data.batch(s, o.batch);
    const double referenceLoss = reference.step(whole.x, whole.y);
    const Batch mine = Data::shard(whole, rank, ranks);
    const double loss = averageOverRanks(replica.step(mine.x, mine.y), mpiComm, ranks);
    if (rank == 0) std::printf("%6lld   %.7f    %.7f\n", static_cast<long long>(s + 1), loss, referenceLoss);
  }
  double worst = worstRelativeDifference(replica.parameters(), reference.parameters());
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, mpiComm);
  const bool identical = replicasIdentical(comm, replica.parameters());
  const bool passed = worst <= kRelativeLimit && identical;
  if (rank == 0)
    std::printf(
        "# after %lld steps: largest relative difference to the one-process run %.3g (limit %g)%s; "
        "replicas bit-identical on all %d ranks: %s\n%s\n",
        static_cast<long long>(o.steps), worst, kRelativeLimit, worst == 0 ? " (bit-identical)" : "", ranks,
        identical ? "yes" : "NO", passed ? "PASSED" : "FAILED");
  return passed ? 0 : 1;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n == 0 ? 0 : (n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2);
}

struct ModeTimes {
  std::vector<double> steps;         // seconds, every timed step
  std::vector<double> roundMedians;  // seconds
  double exchangeSeconds = 0;        // ddp: the buckets' all-reduces ...
  double blockedSeconds = 0;         // ... and the part of them synchronize() waited for
};

void timeRound(Replica& replica, const TrainerOptions& o, const Data& data, ringsync::Communicator& comm, int64_t& step,
               ModeTimes* times) {
  std::vector<double> round;
  for (int64_t k = 0; k < o.stepsPerRound; ++k, ++step) {
    const Batch mine = Data::shard(data.batch(step, o.batch), comm.rank(), comm.size());
    const auto start = std::chrono::steady_clock::now();
    replica.step(mine.x, mine.y);
    round.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (times && replica.ddp()) {
      double exchange = 0;
      for (const ringsync::BucketTiming& b : replica.ddp()->lastStepBuckets()) exchange += b.exchangeSeconds;
      times->exchangeSeconds += exchange;
      times->blockedSeconds += std::min(exchange, replica.ddp()->stats().lastSynchronizeSeconds);
    }
  }
  if (!times) return;
  times->steps.insert(times->steps.end(), round.begin(), round.end());
  times->roundMedians.push_back(median(round));
}

// "overlapped (auto)", "not overlapped (--overlap off)", ...: what DDP chose and who chose it.
std::string ddpOverlapText(const TrainerOptions& o, const std::vector<std::unique_ptr<Replica>>& replicas) {
  for (const auto& replica : replicas) {
    if (!replica->ddp()) continue;
    const char* chooser = !o.model.ddpOverlap ? "auto" : *o.model.ddpOverlap ? "--overlap on" : "--overlap off";
    return std::string(replica->ddp()->overlapping() ? "overlapped" : "not overlapped") + " (" + chooser + ")";
  }
  return "not timed";
}

int runCompare(const TrainerOptions& o, ringsync::Communicator& comm, MPI_Comm mpiComm, const Data& data) {
  std::vector<std::unique_ptr<Replica>> replicas;
  for (Sync sync : o.compare) replicas.push_back(std::make_unique<Replica>(o.model, o.seed, sync, comm, mpiComm));
  std::vector<ModeTimes> times(o.compare.size());
  std::vector<int64_t> steps(o.compare.size(), 0);
  for (std::size_t m = 0; m < replicas.size(); ++m)  // warm-up round, not timed
    timeRound(*replicas[m], o, data, comm, steps[m], nullptr);
  for (int r = 0; r < o.rounds; ++r)
    for (std::size_t m = 0; m < replicas.size(); ++m) timeRound(*replicas[m], o, data, comm, steps[m], &times[m]);
  if (comm.rank() != 0) return 0;
  std::printf(
      "# libtorch_ddp_trainer --compare: %s, %lld parameters, %d ranks, batch %lld (%lld per rank), "
      "%d rounds x %lld steps per mode, interleaved; times of rank 0; ddp %s\n"
      "# mode           median_ms  round_medians_min..max_ms  hidden\n",
      describeModel(o.model).c_str(), static_cast<long long>(replicas[0]->parameterCount()), comm.size(),
      static_cast<long long>(o.batch), static_cast<long long>(o.batch / comm.size()), o.rounds,
      static_cast<long long>(o.stepsPerRound), ddpOverlapText(o, replicas).c_str());
  for (std::size_t m = 0; m < replicas.size(); ++m) {
    const ModeTimes& t = times[m];
    const auto [low, high] = std::minmax_element(t.roundMedians.begin(), t.roundMedians.end());
    std::string hidden = "-";
    if (replicas[m]->ddp() && t.exchangeSeconds > 0)
      hidden = std::to_string(static_cast<int>(100 * (1 - t.blockedSeconds / t.exchangeSeconds) + 0.5)) + "%";
    std::printf("%-14s %10.3f  %10.3f..%-10.3f       %s\n", syncName(replicas[m]->sync()), 1e3 * median(t.steps),
                1e3 * *low, 1e3 * *high, hidden.c_str());
  }
  return 0;
}

int run(const TrainerOptions& o) {
  ::torch::set_num_threads(o.threads);
  ringsync::Communicator comm(MPI_COMM_WORLD);
  if (o.batch % comm.size() != 0)
    throw std::invalid_argument("--batch " + std::to_string(o.batch) + " does not split evenly over " +
                                std::to_string(comm.size()) + " ranks");
  MPI_Comm mpiComm = MPI_COMM_NULL;  // the MPI baseline's own communicator
  MPI_Comm_dup(MPI_COMM_WORLD, &mpiComm);
  const int64_t wanted = o.batch * (o.compareMode ? o.stepsPerRound * (o.rounds + 1) : o.steps);
  const Data data(readTrainingImages(o.dataDir, static_cast<std::size_t>(std::min<int64_t>(wanted, 60000))),
                  o.model.dtype);
  const int status = o.compareMode ? runCompare(o, comm, mpiComm, data) : runCheck(o, comm, mpiComm, data);
  MPI_Comm_free(&mpiComm);
  return status;
}

}  // namespace
}  // namespace ringsync_example

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    const ringsync_example::TrainerOptions options = ringsync_example::parseTrainerOptions(argc, argv);
    return ringsync_example::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libtorch_ddp_trainer: rank %d: %s\n", rank, e.what());
    // The other ranks may be waiting in a collective for this one.
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
}
