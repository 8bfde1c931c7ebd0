// ringsync.torch._c10d: ProcessGroupRingsync (a c10d::Backend) for torch.distributed, built with
// torch's bundled pybind11 so that it shares torch's pybind11 internals: the class derives from
// torch's own Backend type, and the exception translator registered here also applies to torch's
// bindings (Work.wait(), ProcessGroup.allreduce(), ...): ringsync's C++ errors reach Python as
// ringsync.MismatchError, TimeoutError, InvalidArgument, AbortedError, ... (the classes of the
// _ringsync module) with ringsync's message.
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "backend_registry.h"
#include "blocking_wait.h"
#include "gil_release.h"
#include "mpi_polling.h"
#include "mpi_requirements.h"
#include "options_from_python.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"

namespace py = pybind11;

namespace ringsync::torch_backend {
namespace {

void setPythonError(const Error& error) {
  try {
    const py::module_ classes = py::module_::import("ringsync._ringsync");
    const char* name = error.code() == ErrorCode::kInternal ? "Error" : errorCodeName(error.code());
    PyErr_SetString(classes.attr(name).ptr(), error.what());
  } catch (const py::error_already_set&) {
    PyErr_SetString(PyExc_RuntimeError, error.what());  // ringsync's module is gone (interpreter exit)
  }
}

// The MPI communicator over MPI_COMM_WORLD's ranks `ranks` (in that order), made by those ranks
// only (MPI_Comm_create_group); the caller frees it.
MPI_Comm createFromWorld(const std::vector<int>& ranks) {
  constexpr int kCreateTag = 0x5253;  // MPI_Comm_create_group's tag never meets point-to-point ones
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MPI_Comm sub = MPI_COMM_NULL;
  checkMpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  int code = MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &members);
  MPI_Group_free(&world);
  checkMpi(code, "MPI_Group_incl");
  code = MPI_Comm_create_group(MPI_COMM_WORLD, members, kCreateTag, &sub);
  MPI_Group_free(&members);
  checkMpi(code, "MPI_Comm_create_group");
  return sub;
}

// rank/size: torch's view of the group; mpiComm: None (MPI_COMM_WORLD) or the Fortran handle of
// the group's MPI communicator (mpi4py's py2f()), duplicated by ringsync; ranks: the group's
// ranks in MPI_COMM_WORLD (a torch subgroup, made without mpi4py), or empty.
c10::intrusive_ptr<RingsyncBackend> makeBackend(int rank, int size, py::handle options, py::handle mpiComm,
                                                const std::vector<int>& ranks) {
  requireMpi();
  requireThreadLevel();
  const Options resolved = optionsFromPython(options);
  if (!ranks.empty() && !mpiComm.is_none()) throw InvalidArgument("ringsync backend: pass mpi_comm or ranks, not both");
  const MPI_Comm parent = mpiComm.is_none() ? MPI_COMM_WORLD : MPI_Comm_f2c(mpiComm.cast<MPI_Fint>());
  std::unique_ptr<Communicator> comm;
  c10::intrusive_ptr<RingsyncBackend> backend;
  {
    py::gil_scoped_release release;  // collective over the group: let other Python threads run
    MPI_Comm sub = ranks.empty() ? MPI_COMM_NULL : createFromWorld(ranks);
    try {
      comm = std::make_unique<Communicator>(ranks.empty() ? parent : sub, resolved);
    } catch (...) {
      if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
      throw;
    }
    if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  }
  if (comm->rank() != rank || comm->size() != size)
    throw InvalidArgument("ringsync backend: torch says rank " + std::to_string(rank) + " of " + std::to_string(size) +
                          ", MPI says rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) +
                          "; launch with `mpirun -np N` and let ringsync.torch.init_process_group() take rank and "
                          "size from MPI (or pass rank=OMPI_COMM_WORLD_RANK, world_size=OMPI_COMM_WORLD_SIZE)");
  {
    py::gil_scoped_release release;  // collective too (the backend's own MPI communicator)
    backend = c10::make_intrusive<RingsyncBackend>(rank, size, std::move(comm));
  }
  registerBackend(backend);
  return backend;
}

// root's `data` on every rank of MPI_COMM_WORLD (the store's address at init_process_group), by
// MPI_Ibcast polled under timeoutSeconds: a rank that never arrives is a TimeoutError.
py::bytes broadcastBytes(const py::bytes& data, int root, double timeoutSeconds) {
  requireMpi();
  std::string payload = data;
  Options options;
  options.timeoutSeconds = timeoutSeconds;
  {
    py::gil_scoped_release release;
    MPI_Comm comm = MPI_COMM_NULL;
    checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    try {
      MpiDeadline deadline(options, "ringsync.torch.init_process_group (sending the store's address)");
      std::int64_t length = static_cast<std::int64_t>(payload.size());
      MPI_Request request = MPI_REQUEST_NULL;
      checkMpi(MPI_Ibcast(&length, 1, MPI_INT64_T, root, comm, &request), "MPI_Ibcast");
      deadline.wait(request, [] { return std::string("every rank to call init_process_group"); });
      payload.resize(static_cast<std::size_t>(length));
      const ByteCount bytes(payload.size());
      checkMpi(MPI_Ibcast(payload.data(), bytes.count(), bytes.type(), root, comm, &request), "MPI_Ibcast");
      deadline.wait(request, [] { return std::string("every rank to call init_process_group"); });
    } catch (...) {
      MPI_Comm_free(&comm);
      throw;
    }
    MPI_Comm_free(&comm);
  }
  return py::bytes(payload);
}

std::pair<int, int> worldRankAndSize() {
  requireMpi();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return {rank, size};
}

}  // namespace
}  // namespace ringsync::torch_backend

PYBIND11_MODULE(_c10d, m) {
  using namespace ringsync::torch_backend;
  m.doc() = "ringsync as a C++ torch.distributed backend (ringsync.torch imports it)";
  py::module_::import("torch.distributed");  // registers c10d's Backend type, the base of ours
  setBlockingWaitHook(&withoutGil);          // the backend's waits outside collectives let go of the GIL

  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const ringsync::Error& e) {
      setPythonError(e);
    }
  });

  py::class_<RingsyncBackend, ::c10d::Backend, c10::intrusive_ptr<RingsyncBackend>>(
      m, "ProcessGroupRingsync",
      "torch.distributed's collectives on a ringsync communicator (a c10d Backend; torch wraps it in a "
      "ProcessGroup). Made by ringsync.torch's registered creator.")
      .def(py::init(&makeBackend), py::arg("rank"), py::arg("size"), py::arg("options"),
           py::arg("mpi_comm") = py::none(), py::arg("ranks") = std::vector<int>{},
           "Collective over the group's ranks. options: a ringsync.Options; mpi_comm: None (MPI_COMM_WORLD) or "
           "an MPI Fortran handle (mpi4py's comm.py2f()); ranks: the group's ranks in MPI_COMM_WORLD (a subgroup "
           "made by its members only). MPI must be initialised (ringsync.init()).")
      .def("shutdown", &RingsyncBackend::shutdown, py::call_guard<py::gil_scoped_release>(),
           "Finish queued collectives, stop the threads, free the communicator.")
      .def("abort", &RingsyncBackend::abort, py::call_guard<py::gil_scoped_release>(),
           "Fail queued collectives and pending messages with AbortedError, without waiting.")
      .def(
          "perform_nocolor_split", [](RingsyncBackend&, py::handle) {},
          "Nothing to do: a split group is made by its members only (torch calls this on the others).")
      .def("__repr__", [](const RingsyncBackend& b) {
        return "ProcessGroupRingsync(rank=" + std::to_string(b.getRank()) + ", size=" + std::to_string(b.getSize()) +
               ")";
      });

  m.def("world_rank_and_size", &worldRankAndSize, "(rank, size) in MPI_COMM_WORLD (MPI initialised)");
  m.def(
      "check_mpi",
      [] {
        requireMpi();
        requireThreadLevel();
      },
      "BackendError unless MPI is initialised with MPI_THREAD_MULTIPLE (what every group needs; checked "
      "before anything is made for one)");
  m.def("broadcast_bytes", &broadcastBytes, py::arg("data"), py::arg("root"), py::arg("timeout_seconds"),
        "root's bytes on every rank of MPI_COMM_WORLD (MPI_Ibcast under the deadline; 0: none)");
  m.def("shutdown_all", &shutdownRegisteredBackends, py::call_guard<py::gil_scoped_release>(),
        "Shut down every ProcessGroupRingsync (at exit, before MPI is finalised).");
}
