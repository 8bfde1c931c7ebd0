#include "communicator_py.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "array_view.h"
#include "bindings.h"
#include "mpi_environment_py.h"
#include "ringsync/errors.h"

namespace ringsync::python {

Communicator& PyCommunicator::get() {
  if (!comm_) throw AbortedError("this ringsync.Communicator was released by ringsync.finalize() (MPI is finalized)");
  return *comm_;
}

void PyCommunicator::releaseMpi() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_) inFlight_.releaseAll(comm_->options().timeoutSeconds);
  comm_.reset();
}

namespace {

// mpi4py (or anything with py2f()) -> its MPI_Comm; None -> MPI_COMM_WORLD. Fortran handles are
// the portable way to pass a communicator between MPI bindings.
MPI_Comm parentComm(nb::handle comm) {
  if (comm.is_none()) return MPI_COMM_WORLD;
  if (!nb::hasattr(comm, "py2f"))
    throw InvalidArgument(std::string("Communicator: comm must be None or an mpi4py communicator, got ") +
                          nb::type_name(comm.type()).c_str());
  return MPI_Comm_f2c(nb::cast<MPI_Fint>(comm.attr("py2f")()));
}

void construct(PyCommunicator* self, nb::handle comm, std::optional<Options> options) {
  ensureMpi();
  const MPI_Comm parent = parentComm(comm);
  const Options resolved = options ? *options : Options::fromEnvironment();
  std::unique_ptr<Communicator> created;
  {
    nb::gil_scoped_release release;  // MPI_Comm_dup is collective: let other Python threads run
    created = std::make_unique<Communicator>(parent, resolved);
  }
  new (self) PyCommunicator(std::move(created));
}

// Runs `body(communicator)` without the GIL, one thread at a time per communicator.
template <typename Body> void locked(PyCommunicator& self, Body&& body) {
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  body(self.get());
}

// `getter(communicator)`'s value, read without the GIL under the communicator's mutex.
template <typename Getter> auto readLocked(PyCommunicator& self, Getter&& getter) {
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(self.mutex());
  return getter(self.get());
}

// A device array stays alive until its stream has passed the collective (stream_keepalive.h);
// a host array is done when the call returns.
void keepUntilStreamPasses(PyCommunicator& self, ImportedArray&& array, CUstream_st* stream) {
  if (array.onDevice) self.inFlight().keep(std::move(array), stream);
  else self.inFlight().releaseCompleted();
}

void allreduce(PyCommunicator& self, nb::handle x, const char* op, nb::handle stream) {
  const ReduceOp reduceOp = parseOp(op, "allreduce");
  ImportedArray a = importArray(x, "allreduce", "x");
  CUstream_st* s = streamFor(a, stream, "allreduce");
  locked(self, [&](Communicator& c) { c.allreduce(a.data, a.data, a.count, a.type, reduceOp, s); });
  keepUntilStreamPasses(self, std::move(a), s);
}

void broadcast(PyCommunicator& self, nb::handle x, int root, nb::handle stream) {
  ImportedArray a = importArray(x, "broadcast", "x");
  CUstream_st* s = streamFor(a, stream, "broadcast");
  locked(self, [&](Communicator& c) { c.broadcast(a.data, a.count, a.type, root, s); });
  keepUntilStreamPasses(self, std::move(a), s);
}

// `large` must hold size() times the elements of `block`, of the same dtype (reduce_scatter's x and
// out, all-gather's out and x), else InvalidArgument naming both.
void requireBlocks(PyCommunicator& self, const char* call, const ImportedArray& large, const char* largeName,
                   const ImportedArray& block, const char* blockName) {
  const std::size_t ranks = static_cast<std::size_t>(self.get().size());
  if (large.type != block.type || large.count != block.count * ranks)
    throw InvalidArgument(std::string(call) + ": " + largeName + " must hold size * " + blockName +
                          ".size = " + std::to_string(block.count * ranks) + " " + dataTypeName(block.type) +
                          " elements, has " + std::to_string(large.count) + " " + dataTypeName(large.type));
}

void reduceScatter(PyCommunicator& self, nb::handle x, nb::handle out, const char* op, nb::handle stream) {
  const ReduceOp reduceOp = parseOp(op, "reduce_scatter");
  ImportedArray send = importArray(x, "reduce_scatter", "x");
  ImportedArray recv = importArray(out, "reduce_scatter", "out");
  requireBlocks(self, "reduce_scatter", send, "x", recv, "out");
  CUstream_st* s = streamFor(send, stream, "reduce_scatter");
  locked(self, [&](Communicator& c) { c.reduceScatter(send.data, recv.data, recv.count, recv.type, reduceOp, s); });
  keepUntilStreamPasses(self, std::move(send), s);
  keepUntilStreamPasses(self, std::move(recv), s);
}

void allgather(PyCommunicator& self, nb::handle x, nb::handle out, nb::handle stream) {
  ImportedArray send = importArray(x, "allgather", "x");
  ImportedArray recv = importArray(out, "allgather", "out");
  requireBlocks(self, "allgather", recv, "out", send, "x");
  CUstream_st* s = streamFor(send, stream, "allgather");
  locked(self, [&](Communicator& c) { c.allgather(send.data, recv.data, send.count, send.type, s); });
  keepUntilStreamPasses(self, std::move(send), s);
  keepUntilStreamPasses(self, std::move(recv), s);
}

nb::dict placement(PyCommunicator& self) {
  const Placement p = readLocked(self, [](Communicator& c) { return c.lastPlacement(); });
  nb::dict d;
  d["backend"] = p.backend;
  d["algorithm"] = p.algorithm;
  d["device"] = p.device;
  return d;
}

}  // namespace

void registerCommunicator(nb::module_& m) {
  nb::class_<PyCommunicator>(m, "Communicator",
                             "All-reduce, reduce-scatter, all-gather, broadcast and barrier among MPI ranks. Every "
                             "rank calls the same collectives in the same order.")
      .def("__init__", &construct, nb::arg("comm") = nb::none(), nb::arg("options") = nb::none(),
           nb::sig("def __init__(self, comm: object | None = None, options: Options | None = None) -> None"),
           "Collective. comm: None (MPI_COMM_WORLD) or an mpi4py communicator (duplicated, never freed here). "
           "options: None reads the RINGSYNC_* variables. Initialises MPI if nobody did.")
      .def_prop_ro("rank", [](PyCommunicator& s) { return s.get().rank(); })
      .def_prop_ro("size", [](PyCommunicator& s) { return s.get().size(); })
      .def_prop_ro(
          "local_rank", [](PyCommunicator& s) { return s.get().localRank(); }, "rank on this node")
      .def_prop_ro(
          "local_size", [](PyCommunicator& s) { return s.get().localSize(); }, "ranks on this node")
      .def("allreduce", &allreduce, nb::arg("x").none(), nb::arg("op") = "sum", nb::arg("stream") = nb::none(),
           nb::sig("def allreduce(self, x: object, op: str = 'sum', stream: object | None = None) -> None"),
           "x = op over all ranks of x, in place. x: a writable C-contiguous array (numpy, torch, DLPack, "
           "buffer protocol); op: 'sum', 'prod', 'min', 'max' or 'avg'; stream: required for CUDA tensors.")
      .def("broadcast", &broadcast, nb::arg("x").none(), nb::arg("root") = 0, nb::arg("stream") = nb::none(),
           nb::sig("def broadcast(self, x: object, root: int = 0, stream: object | None = None) -> None"),
           "Copy root's x into every rank's x, in place.")
      .def("reduce_scatter", &reduceScatter, nb::arg("x").none(), nb::arg("out").none(), nb::arg("op") = "sum",
           nb::arg("stream") = nb::none(),
           nb::sig("def reduce_scatter(self, x: object, out: object, op: str = 'sum', stream: object | None = None) -> "
                   "None"),
           "out = block `rank` of op over all ranks of x (MPI_Reduce_scatter_block): x holds size * out.size "
           "elements (flat, C order). In place when out is this rank's block of x. op as allreduce's; stream: "
           "required for CUDA tensors.")
      .def("allgather", &allgather, nb::arg("x").none(), nb::arg("out").none(), nb::arg("stream") = nb::none(),
           nb::sig("def allgather(self, x: object, out: object, stream: object | None = None) -> None"),
           "out[r * x.size:(r + 1) * x.size] = x of rank r (flat, C order). In place when x is this rank's block "
           "of out; stream: required for CUDA tensors.")
      .def("barrier", [](PyCommunicator& s) { locked(s, [](Communicator& c) { c.barrier(); }); })
      .def(
          "duplicate",
          [](PyCommunicator& s) {
            std::unique_ptr<Communicator> dup;
            locked(s, [&](Communicator& c) { dup = std::make_unique<Communicator>(c.duplicate()); });
            return new PyCommunicator(std::move(dup));
          },
          nb::rv_policy::take_ownership, "A new communicator over the same ranks with its own traffic (collective).")
      .def_prop_ro("options", [](PyCommunicator& s) { return s.get().options(); })
      // State another Python thread's collective may be changing: read under the mutex.
      .def_prop_ro("aborted",
                   [](PyCommunicator& s) { return readLocked(s, [](Communicator& c) { return c.aborted(); }); })
      .def_prop_ro("abort_reason",
                   [](PyCommunicator& s) { return readLocked(s, [](Communicator& c) { return c.abortReason(); }); })
      .def_prop_ro("call_count",
                   [](PyCommunicator& s) { return readLocked(s, [](Communicator& c) { return c.callCount(); }); })
      .def_prop_ro("last_placement", &placement, "{'backend', 'algorithm', 'device'} of the last collective")
      .def("__repr__", [](PyCommunicator& s) -> std::string {
        try {
          return "ringsync.Communicator(rank=" + std::to_string(s.get().rank()) +
                 ", size=" + std::to_string(s.get().size()) + ")";
        } catch (const Error&) {
          return "ringsync.Communicator(released)";
        }
      });
}

}  // namespace ringsync::python
