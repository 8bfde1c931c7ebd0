// ringsync.GradientAverager: averages a list of gradient arrays across ranks every step, fused
// into buckets and (with MPI_THREAD_MULTIPLE) overlapped with backward. It holds the arrays it
// was given, so their memory stays alive as long as it does; they must not be reallocated.
// Given `parameters=` it is sharded (ringsync::ShardedGradientAverager, ZeRO-1/2): each bucket
// is reduce-scattered, the caller updates the parameters on shard_range(i) and marks them, and the
// parameters are all-gathered bucket by bucket.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "array_view.h"
#include "bindings.h"
#include "communicator_py.h"
#include "lifetime.h"
#include "ringsync/errors.h"
#include "ringsync/gradient_averager.h"
#include "ringsync/sharded_averager.h"

namespace ringsync::python {
namespace {

// The arrays one list argument held: imported (their exporters kept alive) and as passed.
struct HeldArrays {
  std::vector<ImportedArray> arrays;
  nb::list objects;
  std::vector<GradientBuffer> buffers;
};

HeldArrays holdArrays(nb::handle sequence, const char* argument) {
  HeldArrays held;
  for (nb::handle item : nb::cast<nb::sequence>(sequence)) {
    const std::string name = std::string(argument) + "[" + std::to_string(held.arrays.size()) + "]";
    held.arrays.push_back(importArray(item, "GradientAverager", name.c_str()));
    held.buffers.push_back({held.arrays.back().data, held.arrays.back().count, held.arrays.back().type});
    held.objects.append(item);
  }
  return held;
}

// One of the two C++ averagers, by mode.
class PyGradientAverager final : public MpiResource {
 public:
  PyGradientAverager(std::unique_ptr<GradientAverager> replicated, std::unique_ptr<ShardedGradientAverager> sharded,
                     HeldArrays gradients, HeldArrays parameters)
      : replicated_(std::move(replicated)),
        sharded_(std::move(sharded)),
        isSharded_(sharded_ != nullptr),
        gradients_(std::move(gradients)),
        parameters_(std::move(parameters)) {}

  // Runs body(averager) on the live averager of either kind.
  template <typename Body> decltype(auto) either(Body&& body) {
    ensureAlive();
    if (sharded_) return body(*sharded_);
    return body(*replicated_);
  }
  ShardedGradientAverager& sharded(const char* call) {
    ensureAlive();
    if (!sharded_)
      throw InvalidArgument(std::string("GradientAverager.") + call +
                            ": this averager is not sharded (pass parameters=[...] to shard it)");
    return *sharded_;
  }
  bool isSharded() const { return isSharded_; }
  std::mutex& mutex() { return mutex_; }
  const HeldArrays& gradients() const { return gradients_; }
  const HeldArrays& parameters() const { return parameters_; }
  void releaseMpi() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    replicated_.reset();
    sharded_.reset();
  }

 private:
  void ensureAlive() const {
    if (!replicated_ && !sharded_)
      throw AbortedError("this ringsync.GradientAverager was released by ringsync.finalize() (MPI is finalized)");
  }

  std::unique_ptr<GradientAverager> replicated_;
  std::unique_ptr<ShardedGradientAverager> sharded_;
  bool isSharded_;
  HeldArrays gradients_;   // keep every array's exporter alive
  HeldArrays parameters_;  // empty when replicated
  std::mutex mutex_;
};

// The GIL released and the averager's lock held around `body`.
template <typename Body> void locked(PyGradientAverager& self, Body&& body) {
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  body();
}

void construct(PyGradientAverager* self, PyCommunicator& comm, nb::sequence gradients, nb::handle parameters,
               std::size_t bucketBytes, std::size_t firstBucketBytes, std::optional<bool> overlap, const char* op,
               bool compressFp16) {
  GradientAveragerOptions options;
  options.bucketBytes = bucketBytes;
  options.firstBucketBytes = firstBucketBytes;
  options.overlap = overlap;
  options.op = parseOp(op, "GradientAverager");
  options.compressFp16 = compressFp16;
  HeldArrays grads = holdArrays(gradients, "gradients");
  HeldArrays params = parameters.is_none() ? HeldArrays{} : holdArrays(parameters, "parameters");
  std::unique_ptr<GradientAverager> replicated;
  std::unique_ptr<ShardedGradientAverager> sharded;
  {
    nb::gil_scoped_release release;  // collective: duplicates the communicator
    std::lock_guard<std::mutex> lock(comm.mutex());
    if (parameters.is_none()) {
      replicated = std::make_unique<GradientAverager>(comm.get(), grads.buffers, options);
    } else {
      sharded = std::make_unique<ShardedGradientAverager>(comm.get(), grads.buffers, params.buffers, options);
    }
  }
  new (self) PyGradientAverager(std::move(replicated), std::move(sharded), std::move(grads), std::move(params));
}

std::size_t checkedIndex(std::int64_t index, const char* call) {
  if (index < 0)
    throw InvalidArgument(std::string("GradientAverager.") + call + ": index=" + std::to_string(index) +
                          " is negative");
  return static_cast<std::size_t>(index);
}

// The stream argument for array `index` of `held` (None: nullptr; CUDA arrays need one).
CUstream_st* streamOf(const HeldArrays& held, std::size_t index, nb::handle stream, const char* call) {
  return index < held.arrays.size() ? streamFor(held.arrays[index], stream, call) : nullptr;
}

void markReady(PyGradientAverager& self, std::int64_t index, nb::handle stream) {
  const std::size_t i = checkedIndex(index, "mark_ready");
  CUstream_st* s = streamOf(self.gradients(), i, stream, "GradientAverager.mark_ready");
  locked(self, [&] { self.either([&](auto& a) { a.markReady(i, s); }); });
}

void markUpdated(PyGradientAverager& self, std::int64_t index, nb::handle stream) {
  const std::size_t i = checkedIndex(index, "mark_updated");
  CUstream_st* s = streamOf(self.parameters(), i, stream, "GradientAverager.mark_updated");
  locked(self, [&] { self.sharded("mark_updated").markUpdated(i, s); });
}

void waitForParameter(PyGradientAverager& self, std::int64_t index, nb::handle stream) {
  const std::size_t i = checkedIndex(index, "wait_for_parameter");
  if (stream.is_none()) return locked(self, [&] { self.sharded("wait_for_parameter").waitForParameter(i); });
  CUstream_st* s = streamOf(self.parameters(), i, stream, "GradientAverager.wait_for_parameter");
  locked(self, [&] { self.sharded("wait_for_parameter").waitForParameter(i, s); });
}

// (begin, end) of this rank's elements of a tensor, given by index or by its gradient or parameter
// array; InvalidArgument for an array the averager does not hold.
std::pair<std::size_t, std::size_t> shardRange(PyGradientAverager& self, nb::handle tensor) {
  ShardRange range;
  if (nb::isinstance<nb::int_>(tensor)) {
    const std::size_t i = checkedIndex(nb::cast<std::int64_t>(tensor), "shard_range");
    locked(self, [&] { range = self.sharded("shard_range").shard(i); });
  } else {
    const ImportedArray array = importArray(tensor, "GradientAverager.shard_range", "tensor");
    locked(self, [&] { range = self.sharded("shard_range").shard(array.data); });
  }
  return {range.begin, range.end};
}

std::pair<std::size_t, std::size_t> shardOf(PyGradientAverager& self, int rank, std::int64_t index) {
  const std::size_t i = checkedIndex(index, "shard_of");
  ShardRange range;
  locked(self, [&] { range = self.sharded("shard_of").shardOf(rank, i); });
  return {range.begin, range.end};
}

nb::dict stats(PyGradientAverager& self) {
  const GradientAveragerStats s = self.either([](auto& a) { return a.stats(); });
  nb::dict d;
  d["buckets"] = s.buckets;
  d["steps"] = s.steps;
  d["last_synchronize_seconds"] = s.lastSynchronizeSeconds;
  d["total_synchronize_seconds"] = s.totalSynchronizeSeconds;
  d["wire_bytes_per_step"] = s.wireBytesPerStep;
  return d;
}

void registerShardedMethods(nb::class_<PyGradientAverager>& c) {
  c.def_prop_ro("sharded", &PyGradientAverager::isSharded, "True when constructed with parameters= (ZeRO-1/2)")
      .def("shard_range", &shardRange, nb::arg("tensor"),
           nb::sig("def shard_range(self, tensor: int | object) -> tuple[int, int]"),
           "Sharded: (begin, end) of this rank's elements of a tensor (an index, or one of its gradient or "
           "parameter arrays); after synchronize() the gradient holds the average there.")
      .def("shard_of", &shardOf, nb::arg("rank"), nb::arg("index"), "Sharded: (begin, end) of any rank's elements.")
      .def_prop_ro(
          "shard_elements", [](PyGradientAverager& s) { return s.sharded("shard_elements").shardElements(); },
          "Sharded: this rank's elements over all tensors (its share of the update and optimizer state).")
      .def("mark_updated", &markUpdated, nb::arg("index"), nb::arg("stream") = nb::none(),
           nb::sig("def mark_updated(self, index: int, stream: object | None = None) -> None"),
           "Sharded, after synchronize(): parameter `index` is updated on its shard; its bucket's all-gather starts "
           "once the bucket is complete.")
      .def("wait_for_parameter", &waitForParameter, nb::arg("index"), nb::arg("stream") = nb::none(),
           nb::sig("def wait_for_parameter(self, index: int, stream: object | None = None) -> None"),
           "Sharded: until parameter `index` is gathered (its bucket and those before it must be marked).")
      .def(
          "gather_parameters",
          [](PyGradientAverager& s) { locked(s, [&] { s.sharded("gather_parameters").gatherParameters(); }); },
          "Sharded: mark_updated on every parameter not yet marked, then wait for every gather.")
      .def_prop_ro(
          "parameters", [](PyGradientAverager& s) { return s.parameters().objects; },
          "The parameter arrays, as passed in (empty when not sharded)");
}

}  // namespace

void registerGradientAverager(nb::module_& m) {
  nb::class_<PyGradientAverager> c(
      m, "GradientAverager",
      "Averages gradient arrays across ranks each step, fused into buckets (Horovod's tensor fusion). "
      "Per step: mark_ready(i) as each gradient is final (backward order), then synchronize(); or "
      "average_all(). Every rank registers the same list (count and dtype per array, same order). "
      "With parameters=[...] it is sharded (ZeRO-1/2): synchronize() leaves each gradient averaged on "
      "shard_range(i); update the parameters there, mark_updated(i) (or gather_parameters()), and every "
      "parameter is all-gathered.");
  c.def("__init__", &construct, nb::arg("comm"), nb::arg("gradients"), nb::kw_only(),
        nb::arg("parameters") = nb::none(), nb::arg("bucket_bytes") = 0, nb::arg("first_bucket_bytes") = 0,
        nb::arg("overlap") = nb::none(), nb::arg("op") = "avg", nb::arg("compress_fp16") = false,
        nb::sig("def __init__(self, comm: Communicator, gradients: Sequence[object], *, "
                "parameters: Sequence[object] | None = None, bucket_bytes: int = 0, first_bucket_bytes: int = 0, "
                "overlap: bool | None = None, op: str = 'avg', compress_fp16: bool = False) -> None"),
        "Collective. gradients (and parameters: one per gradient, same size and dtype): writable C-contiguous "
        "arrays, kept alive by the averager. bucket_bytes / first_bucket_bytes: 0 takes comm.options'. op: 'avg' "
        "or 'sum'. compress_fp16: float32 sent as float16 (the reduction only). overlap: buckets start during "
        "backward; None: where that gains (a GPU, ranks across nodes, or two CPUs per rank; `overlapping` "
        "says the choice).")
      .def("mark_ready", &markReady, nb::arg("index"), nb::arg("stream") = nb::none(),
           nb::sig("def mark_ready(self, index: int, stream: object | None = None) -> None"),
           "Gradient `index` is final for this step (its bucket may start now). stream: for CUDA gradients.")
      .def(
          "synchronize", [](PyGradientAverager& s) { locked(s, [&] { s.either([](auto& a) { a.synchronize(); }); }); },
          "Wait for every bucket; afterwards every gradient holds the result (sharded: on its shard_range).")
      .def(
          "average_all", [](PyGradientAverager& s) { locked(s, [&] { s.either([](auto& a) { a.averageAll(); }); }); },
          "mark_ready on every gradient not yet marked, then synchronize().")
      .def_prop_ro("gradient_count",
                   [](PyGradientAverager& s) { return s.either([](auto& a) { return a.gradientCount(); }); })
      .def_prop_ro("bucket_count",
                   [](PyGradientAverager& s) { return s.either([](auto& a) { return a.bucketCount(); }); })
      .def_prop_ro(
          "overlapping", [](PyGradientAverager& s) { return s.either([](auto& a) { return a.overlapping(); }); },
          "True when buckets start during backward (needs MPI_THREAD_MULTIPLE)")
      .def_prop_ro(
          "gradients", [](PyGradientAverager& s) { return s.gradients().objects; }, "The arrays, as passed in")
      .def(
          "bucket_assignment",
          [](PyGradientAverager& s) { return s.either([](auto& a) { return a.bucketAssignment(); }); },
          "Which bucket each gradient belongs to (buckets numbered in launch order).")
      .def("stats", &stats,
           "{'buckets', 'steps', 'last_synchronize_seconds', 'total_synchronize_seconds', 'wire_bytes_per_step'}");
  registerShardedMethods(c);
}

}  // namespace ringsync::python
