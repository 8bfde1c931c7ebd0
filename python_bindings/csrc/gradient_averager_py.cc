// ringsync.GradientAverager: averages a list of gradient arrays across ranks every step, fused
// into buckets and (with MPI_THREAD_MULTIPLE) overlapped with backward. It holds the arrays it
// was given, so their memory stays alive as long as it does; they must not be reallocated.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "array_view.h"
#include "bindings.h"
#include "communicator_py.h"
#include "lifetime.h"
#include "ringsync/errors.h"
#include "ringsync/gradient_averager.h"

namespace ringsync::python {
namespace {

class PyGradientAverager final : public MpiResource {
 public:
  PyGradientAverager(std::unique_ptr<GradientAverager> averager, std::vector<ImportedArray> arrays, nb::list objects)
      : averager_(std::move(averager)), arrays_(std::move(arrays)), objects_(std::move(objects)) {}

  GradientAverager& get() {
    if (!averager_)
      throw AbortedError("this ringsync.GradientAverager was released by ringsync.finalize() (MPI is finalized)");
    return *averager_;
  }
  std::mutex& mutex() { return mutex_; }
  const std::vector<ImportedArray>& arrays() const { return arrays_; }
  nb::list objects() const { return objects_; }
  void releaseMpi() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    averager_.reset();
  }

 private:
  std::unique_ptr<GradientAverager> averager_;
  std::vector<ImportedArray> arrays_;  // keep every gradient's exporter alive
  nb::list objects_;                   // the arrays as the caller passed them
  std::mutex mutex_;
};

template <typename Body> void locked(PyGradientAverager& self, Body&& body) {
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  body(self.get());
}

void construct(PyGradientAverager* self, PyCommunicator& comm, nb::sequence gradients, std::size_t bucketBytes,
               std::size_t firstBucketBytes, bool overlap, const char* op, bool compressFp16) {
  GradientAveragerOptions options;
  options.bucketBytes = bucketBytes;
  options.firstBucketBytes = firstBucketBytes;
  options.overlap = overlap;
  options.op = parseOp(op, "GradientAverager");
  options.compressFp16 = compressFp16;
  std::vector<ImportedArray> arrays;
  std::vector<GradientBuffer> buffers;
  nb::list objects;
  for (nb::handle gradient : gradients) {
    const std::string name = "gradients[" + std::to_string(arrays.size()) + "]";
    arrays.push_back(importArray(gradient, "GradientAverager", name.c_str()));
    buffers.push_back({arrays.back().data, arrays.back().count, arrays.back().type});
    objects.append(gradient);
  }
  std::unique_ptr<GradientAverager> averager;
  {
    nb::gil_scoped_release release;  // collective: duplicates the communicator
    std::lock_guard<std::mutex> lock(comm.mutex());
    averager = std::make_unique<GradientAverager>(comm.get(), std::move(buffers), options);
  }
  new (self) PyGradientAverager(std::move(averager), std::move(arrays), std::move(objects));
}

std::size_t checkedIndex(std::int64_t index) {
  if (index < 0) throw InvalidArgument("GradientAverager.mark_ready: index=" + std::to_string(index) + " is negative");
  return static_cast<std::size_t>(index);
}

void markReady(PyGradientAverager& self, std::int64_t index, nb::handle stream) {
  const std::size_t i = checkedIndex(index);
  CUstream_st* s = nullptr;
  if (i < self.arrays().size()) s = streamFor(self.arrays()[i], stream, "GradientAverager.mark_ready");
  locked(self, [&](GradientAverager& a) { a.markReady(i, s); });
}

nb::dict stats(PyGradientAverager& self) {
  const GradientAveragerStats s = self.get().stats();
  nb::dict d;
  d["buckets"] = s.buckets;
  d["steps"] = s.steps;
  d["last_synchronize_seconds"] = s.lastSynchronizeSeconds;
  d["total_synchronize_seconds"] = s.totalSynchronizeSeconds;
  return d;
}

}  // namespace

void registerGradientAverager(nb::module_& m) {
  nb::class_<PyGradientAverager>(
      m, "GradientAverager",
      "Averages gradient arrays across ranks each step, fused into buckets (Horovod's tensor fusion). "
      "Per step: mark_ready(i) as each gradient is final (backward order), then synchronize(); or "
      "average_all(). Every rank registers the same list (count and dtype per array, same order).")
      .def("__init__", &construct, nb::arg("comm"), nb::arg("gradients"), nb::kw_only(), nb::arg("bucket_bytes") = 0,
           nb::arg("first_bucket_bytes") = 0, nb::arg("overlap") = true, nb::arg("op") = "avg",
           nb::arg("compress_fp16") = false,
           nb::sig("def __init__(self, comm: Communicator, gradients: Sequence[object], *, bucket_bytes: int = 0, "
                   "first_bucket_bytes: int = 0, overlap: bool = True, op: str = 'avg', "
                   "compress_fp16: bool = False) -> None"),
           "Collective. gradients: writable C-contiguous arrays, kept alive by the averager. bucket_bytes / "
           "first_bucket_bytes: 0 takes comm.options'. op: 'avg' or 'sum'. compress_fp16: float32 sent as float16.")
      .def("mark_ready", &markReady, nb::arg("index"), nb::arg("stream") = nb::none(),
           nb::sig("def mark_ready(self, index: int, stream: object | None = None) -> None"),
           "Gradient `index` is final for this step (its bucket may start now). stream: for CUDA gradients.")
      .def("synchronize", [](PyGradientAverager& s) { locked(s, [](GradientAverager& a) { a.synchronize(); }); },
           "Wait for every bucket; afterwards every gradient holds the result.")
      .def("average_all", [](PyGradientAverager& s) { locked(s, [](GradientAverager& a) { a.averageAll(); }); },
           "mark_ready on every gradient not yet marked, then synchronize().")
      .def_prop_ro("gradient_count", [](PyGradientAverager& s) { return s.get().gradientCount(); })
      .def_prop_ro("bucket_count", [](PyGradientAverager& s) { return s.get().bucketCount(); })
      .def_prop_ro("overlapping", [](PyGradientAverager& s) { return s.get().overlapping(); },
                   "True when buckets start during backward (needs MPI_THREAD_MULTIPLE)")
      .def_prop_ro("gradients", &PyGradientAverager::objects, "The arrays, as passed in")
      .def("bucket_assignment", [](PyGradientAverager& s) { return s.get().bucketAssignment(); },
           "Which bucket each gradient belongs to (buckets numbered in launch order).")
      .def("stats", &stats, "{'buckets', 'steps', 'last_synchronize_seconds', 'total_synchronize_seconds'}");
}

}  // namespace ringsync::python
