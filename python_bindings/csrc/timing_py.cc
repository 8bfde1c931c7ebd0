// ringsync._timing: the same collective timed in a C++ loop, for python_bindings/bench: the
// Python call's overhead is its time minus this loop's, measured in one process on one
// communicator and one buffer. The MPI_Allreduce loop is the host baseline every figure is
// quoted against.
#include <chrono>
#include <cstdint>
#include <string>

#include <mpi.h>

#include "array_view.h"
#include "bindings.h"
#include "communicator_py.h"
#include "ringsync/errors.h"

namespace ringsync::python {
namespace {

using Clock = std::chrono::steady_clock;

MPI_Datatype mpiType(DataType type) {
  switch (type) {
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kUInt32: return MPI_UINT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kUInt64: return MPI_UINT64_T;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    default: break;
  }
  throw InvalidArgument(std::string("mpi_allreduce_loop: MPI has no ") + dataTypeName(type) + " type");
}

MPI_Op mpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    default: break;
  }
  throw InvalidArgument("mpi_allreduce_loop: MPI has no avg operator");
}

// Seconds for `iterations` in-place all-reduces of x through ringsync, timed in C++.
double allreduceLoop(PyCommunicator& self, nb::handle x, const char* op, std::size_t iterations) {
  const ReduceOp reduceOp = parseOp(op, "allreduce_loop");
  const ImportedArray a = importArray(x, "allreduce_loop", "x");
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  Communicator& comm = self.get();
  const auto start = Clock::now();
  for (std::size_t i = 0; i < iterations; ++i) comm.allreduce(a.data, a.data, a.count, a.type, reduceOp);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The same with MPI_Allreduce(MPI_IN_PLACE) on the communicator's MPI communicator.
double mpiAllreduceLoop(PyCommunicator& self, nb::handle x, const char* op, std::size_t iterations) {
  const ReduceOp reduceOp = parseOp(op, "mpi_allreduce_loop");
  const ImportedArray a = importArray(x, "mpi_allreduce_loop", "x");
  const MPI_Datatype type = mpiType(a.type);
  const MPI_Op mpiReduceOp = mpiOp(reduceOp);
  if (a.count > static_cast<std::size_t>(INT32_MAX)) throw InvalidArgument("mpi_allreduce_loop: count exceeds int");
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  const MPI_Comm comm = self.get().mpiComm();
  const auto start = Clock::now();
  for (std::size_t i = 0; i < iterations; ++i)
    if (MPI_Allreduce(MPI_IN_PLACE, a.data, static_cast<int>(a.count), type, mpiReduceOp, comm) != MPI_SUCCESS)
      throw BackendError("mpi_allreduce_loop: MPI_Allreduce failed");
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

void registerTiming(nb::module_& m) {
  nb::module_ timing = m.def_submodule("_timing", "C++ timing loops for python_bindings/bench (not public API)");
  timing.def("allreduce_loop", &allreduceLoop, nb::arg("comm"), nb::arg("x"), nb::arg("op"), nb::arg("iterations"),
             "Seconds for `iterations` in-place Communicator::allreduce calls on x, timed in C++.");
  timing.def("mpi_allreduce_loop", &mpiAllreduceLoop, nb::arg("comm"), nb::arg("x"), nb::arg("op"),
             nb::arg("iterations"), "Seconds for `iterations` MPI_Allreduce(MPI_IN_PLACE) calls on comm's MPI_Comm.");
}

}  // namespace ringsync::python
