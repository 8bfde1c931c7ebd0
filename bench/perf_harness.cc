#include "perf_harness.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "perf_report.h"
#include "ringsync/errors.h"
#include "ringsync/mpi_environment.h"
#include "ringsync/options.h"

extern char** environ;

namespace ringsync::bench {
namespace {

constexpr unsigned char kSentinel = 0xA5;  // what a result buffer holds before the collective writes it
constexpr int kRounds = 4;                 // timed iterations are split into this many interleaved rounds

// The per-size measurements over buffers allocated once for the largest size.
class PerfSweep {
 public:
  PerfSweep(const PerfCollective& collective, const PerfArgs& args, Communicator& comm, Communicator* unchecked,
            const MpiBaseline& mpi)
      : collective_(collective),
        args_(args),
        comm_(comm),
        unchecked_(unchecked),
        mpi_(mpi),
        context_{comm.rank(), comm.size(), args},
        device_(onDevice(args.backend)) {
    const std::size_t bytes = args.maxBytes + dataTypeSize(args.type);
    // One allocation each, not slices of one: --buffers stands for separately allocated tensors.
    for (int k = 0; k < args.bufferSets; ++k)
      sets_.push_back({device_ ? makeDeviceMemory(bytes) : makeHostMemory(bytes),
                       device_ ? makeDeviceMemory(bytes) : makeHostMemory(bytes)});
    if (device_) {
      stageSend_ = makeHostMemory(bytes);
      stageRecv_ = makeHostMemory(bytes);
    }
    stream_ = device_ ? makeDeviceStream() : makeHostStream();
  }

  // Like nccl-tests, once before the sweep: the first calls pay for connection set-up and first
  // touches inside MPI and ringsync, which must not land in the first row's figures.
  void warmUp(std::size_t minBytes, std::size_t maxBytes) {
    for (std::size_t bytes : {maxBytes, minBytes}) {
      const PerfShape shape = collective_.shape(bytes / dataTypeSize(args_.type), context_);
      for (std::size_t k = 0; k < sets_.size(); ++k) prepare(shape, false, k);
      const bool library = args_.backend != PerfBackend::kMpi;
      const bool mpi = !library || args_.compare == PerfCompare::kMpi;
      for (int i = 0; i < args_.warmup * static_cast<int>(sets_.size()); ++i) {
        const BufferSet& set = sets_[static_cast<std::size_t>(i) % sets_.size()];
        void* send = set.send->data();
        void* recv = set.recv->data();
        if (library) collective_.run(comm_, send, recv, shape.callCount, args_, *stream_);
        if (unchecked_) collective_.run(*unchecked_, send, recv, shape.callCount, args_, *stream_);
        if (mpi) collective_.runMpi(mpi_, send, recv, shape.callCount, args_);
      }
      stream_->synchronize();
    }
  }

  PerfRow measure(std::size_t bytes) {
    PerfRow row;
    row.bytes = bytes;
    row.count = bytes / dataTypeSize(args_.type);
    const Who measured = args_.backend == PerfBackend::kMpi ? Who::kMpi : Who::kRingsync;
    std::vector<Form> forms;
    forms.push_back({measured, false, &row.outOfPlace});
    forms.push_back({measured, true, &row.inPlace});
    if (args_.compare != PerfCompare::kNone) {
      row.baseline.emplace();
      forms.push_back({args_.compare == PerfCompare::kMpi ? Who::kMpi : Who::kUnchecked, false, &*row.baseline});
    }
    const PerfShape shape = collective_.shape(row.count, context_);
    for (const Form& form : forms) checkAndWarm(form, shape);
    timeInterleaved(forms, shape);
    return row;
  }

 private:
  struct BufferSet {
    std::unique_ptr<PerfMemory> send, recv;
  };

  // Where the host side of set `k` is written and read: the set itself, or the staging buffers
  // the device sets are uploaded from and downloaded to.
  std::byte* hostSend(std::size_t k) {
    return static_cast<std::byte*>(device_ ? stageSend_->data() : sets_[k].send->data());
  }
  std::byte* hostRecv(std::size_t k) {
    return static_cast<std::byte*>(device_ ? stageRecv_->data() : sets_[k].recv->data());
  }

  std::size_t bytesOf(std::size_t count) const { return count * dataTypeSize(args_.type); }

  // The input in the buffer the call reads; the result buffer filled with the sentinel (in place:
  // the whole buffer, then the input at its place).
  // Of buffer set `k`.
  void prepare(const PerfShape& shape, bool inPlace, std::size_t k) {
    const std::size_t recvBytes = bytesOf(std::max(shape.resultCount, shape.inPlaceInputOffset + shape.inputCount));
    std::memset(hostRecv(k), kSentinel, recvBytes);
    if (inPlace) {
      collective_.fillInput(hostRecv(k) + bytesOf(shape.inPlaceInputOffset), shape.inputCount, context_);
    } else {
      collective_.fillInput(hostSend(k), shape.inputCount, context_);
      sets_[k].send->upload(hostSend(k), bytesOf(shape.inputCount));
    }
    sets_[k].recv->upload(hostRecv(k), recvBytes);
  }

  enum class Who { kRingsync, kUnchecked, kMpi };
  struct Form {
    Who who;
    bool inPlace;
    PerfMeasure* result;
  };

  // On buffer set `k`.
  void call(const Form& form, const PerfShape& shape, std::size_t k) {
    auto* base = static_cast<std::byte*>(sets_[k].recv->data());
    const void* send = form.inPlace ? base + bytesOf(shape.inPlaceInputOffset) : sets_[k].send->data();
    void* recv = form.inPlace ? base + bytesOf(shape.inPlaceResultOffset) : base;
    switch (form.who) {
      case Who::kRingsync: return collective_.run(comm_, send, recv, shape.callCount, args_, *stream_);
      case Who::kUnchecked: return collective_.run(*unchecked_, send, recv, shape.callCount, args_, *stream_);
      case Who::kMpi: return collective_.runMpi(mpi_, send, recv, shape.callCount, args_);
    }
  }

  // The check (one call on fresh input in every buffer set, compared with the closed form) and
  // the warm-up (each set as often as one set alone would be).
  void checkAndWarm(const Form& form, const PerfShape& shape) {
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < sets_.size(); ++k) {
      prepare(shape, form.inPlace, k);
      if (!args_.check) continue;
      call(form, shape, k);
      stream_->synchronize();
      const std::size_t resultAt = form.inPlace ? shape.inPlaceResultOffset : 0;
      sets_[k].recv->download(hostRecv(k), bytesOf(resultAt + shape.resultCount));
      wrong += collective_.countWrong(hostRecv(k) + bytesOf(resultAt), shape.resultCount, context_);
    }
    if (args_.check) form.result->wrong = sumOverRanks(wrong);
    for (int i = 0; i < args_.warmup * static_cast<int>(sets_.size()); ++i) call(form, shape, nextSet());
    stream_->synchronize();
  }

  // The set the next call runs on: round-robin, so each call finds its buffers as the previous
  // sets.size() - 1 calls left the caches.
  std::size_t nextSet() { return nextSet_++ % sets_.size(); }

  // The timed iterations of all forms, interleaved in rounds with the order rotated each round,
  // so that a slow spell of a shared machine does not land on one form only.
  void timeInterleaved(const std::vector<Form>& forms, const PerfShape& shape) {
    const int rounds = std::min(args_.iterations, kRounds);
    std::vector<double> seconds(forms.size(), 0.0);
    for (int r = 0; r < rounds; ++r) {
      const int iterations = args_.iterations * (r + 1) / rounds - args_.iterations * r / rounds;
      for (std::size_t k = 0; k < forms.size(); ++k) {
        const std::size_t f = (k + static_cast<std::size_t>(r)) % forms.size();
        MPI_Barrier(MPI_COMM_WORLD);
        stream_->start();
        for (int i = 0; i < iterations; ++i) call(forms[f], shape, nextSet());
        double elapsed = stream_->stopSeconds();
        MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        seconds[f] += elapsed;
      }
    }
    // nccl-tests' algbw: the whole array (the larger of input and result) over the time.
    const double bytes = static_cast<double>(bytesOf(std::max(shape.inputCount, shape.resultCount)));
    for (std::size_t f = 0; f < forms.size(); ++f) {
      PerfMeasure& m = *forms[f].result;
      m.seconds = seconds[f] / args_.iterations;
      m.algbw = m.seconds > 0 ? bytes / m.seconds / 1e9 : 0;
      m.busbw = m.algbw * collective_.busFactor(context_.ranks);
    }
  }

  static std::size_t sumOverRanks(std::size_t value) {
    unsigned long long total = value;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return static_cast<std::size_t>(total);
  }

  const PerfCollective& collective_;
  const PerfArgs& args_;
  Communicator& comm_;
  Communicator* unchecked_;  // --compare nocheck: the same options but RINGSYNC_CHECK=0
  const MpiBaseline& mpi_;
  PerfContext context_;
  bool device_;
  std::vector<BufferSet> sets_;  // --buffers
  std::size_t nextSet_ = 0;
  std::unique_ptr<PerfMemory> stageSend_, stageRecv_;
  std::unique_ptr<PerfStream> stream_;
};

BackendChoice libraryBackend(PerfBackend backend) {
  switch (backend) {
    case PerfBackend::kRing: return BackendChoice::kRing;
    case PerfBackend::kNccl: return BackendChoice::kNccl;
    case PerfBackend::kStaged: return BackendChoice::kStaged;
    default: return BackendChoice::kAuto;
  }
}

// Settings outside ringsync that change the figures: glibc's allocator and the Open MPI transport
// choices a user sets (mpirun adds many OMPI_MCA_* variables of its own; those are left out).
std::string relevantEnvironment() {
  static const char* const kPrefixes[] = {"GLIBC_TUNABLES=", "OMPI_MCA_pml=", "OMPI_MCA_btl", "OMPI_MCA_coll",
                                          "OMPI_MCA_mpi_yield"};
  std::string text;
  for (char** entry = environ; *entry; ++entry) {
    const std::string variable = *entry;
    for (const char* prefix : kPrefixes)
      if (variable.rfind(prefix, 0) == 0) text += (text.empty() ? "" : " ") + variable;
  }
  return text;
}

std::string mpiLibrary() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string text(version, static_cast<std::size_t>(length));
  return text.substr(0, text.find_first_of("\n,"));
}

PerfSetup describeSetup(const PerfCollective& collective, const PerfArgs& args, const Communicator& comm) {
  PerfSetup s;
  s.tool = collective.traits().name;
  s.collective = collective.collectiveName();
  s.baselineName = args.compare == PerfCompare::kNoCheck ? "RINGSYNC_CHECK=0" : collective.baselineName();
  s.ranks = comm.size();
  s.localRanks = comm.localSize();
  s.backend = perfBackendName(args.backend);
  s.buffers = onDevice(args.backend) ? "device" : "host";
  s.bufferSets = args.bufferSets;
  s.type = dataTypeName(args.type);
  s.op = collective.opColumn(args);
  s.root = args.root;
  s.iterations = args.iterations;
  s.warmup = args.warmup;
  s.check = args.check;
  s.compare = args.compare != PerfCompare::kNone;
  s.settings = comm.options().describe();
  s.environment = relevantEnvironment();
  s.mpiLibrary = mpiLibrary();
  s.command = args.command;
  s.note = collective.note();
  return s;
}

// Device backends need a GPU on every rank; all ranks reach the same verdict.
bool deviceUsable(const char* tool, const PerfArgs& args, const Communicator& comm) {
  const std::string why = useDevice(comm.cudaDevice());
  int bad = why.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad && comm.rank() == 0)
    std::fprintf(stderr, "# %s: --backend %s runs on device buffers, but %s; nothing was measured\n", tool,
                 perfBackendName(args.backend), why.empty() ? "another rank has no usable GPU" : why.c_str());
  return bad == 0;
}

int sweep(const PerfCollective& collective, const PerfArgs& args) {
  Options options = Options::fromEnvironment();
  options.backend = libraryBackend(args.backend);
  Communicator comm(MPI_COMM_WORLD, options);
  const char* tool = collective.traits().name;
  if (collective.traits().hasRoot && (args.root < 0 || args.root >= comm.size())) {
    if (comm.rank() == 0) std::fprintf(stderr, "%s: -r %d is not a rank of %d\n", tool, args.root, comm.size());
    return 2;
  }
  if (onDevice(args.backend) && !deviceUsable(tool, args, comm)) return 3;
  std::unique_ptr<Communicator> unchecked;
  if (args.compare == PerfCompare::kNoCheck) {
    Options off = options;
    off.checkCalls = false;
    unchecked = std::make_unique<Communicator>(MPI_COMM_WORLD, off);
  }
  const MpiBaseline mpi(MPI_COMM_WORLD);
  PerfSweep measurements(collective, args, comm, unchecked.get(), mpi);
  std::unique_ptr<PerfReport> report;
  if (comm.rank() == 0) {
    report = std::make_unique<PerfReport>(describeSetup(collective, args, comm), stdout);
    report->printHeader();
  }
  const std::vector<std::size_t> sizes = sweepSizes(args, dataTypeSize(args.type));
  if (!sizes.empty()) measurements.warmUp(sizes.front(), sizes.back());
  for (std::size_t bytes : sizes) {
    const PerfRow row = measurements.measure(bytes);
    if (report) report->add(row);
  }
  int wrong = 0;
  if (report) {
    wrong = report->printFooter() > 0 ? 1 : 0;
    if (!args.jsonPath.empty()) report->writeJson(args.jsonPath);
  }
  MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return wrong ? 1 : 0;
}

}  // namespace

int runPerf(int argc, char** argv, const PerfCollective& collective) {
  MpiEnvironment mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PerfArgs args;
  if (auto code = parsePerfArgs(argc, argv, collective.traits(), rank, args)) return *code;
  try {
    return sweep(collective, args);
  } catch (const InvalidArgument& error) {
    // Options from the environment are read the same way on every rank: all ranks stop here.
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", collective.traits().name, error.what());
    return 2;
  } catch (const std::exception& error) {
    // Other ranks may be inside a collective: end the whole job rather than leave them waiting.
    std::fprintf(stderr, "[rank %d] %s: %s\n", rank, collective.traits().name, error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}

}  // namespace ringsync::bench
