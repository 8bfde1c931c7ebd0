// ringsync.torch._c10d: ProcessGroupRingsync (a c10d::Backend) for torch.distributed, built with
// torch's bundled pybind11 so that it shares torch's pybind11 internals: the class derives from
// torch's own Backend type, and the exception translator registered here also applies to torch's
// bindings (Work.wait(), ProcessGroup.allreduce(), ...): ringsync's C++ errors reach Python as
// ringsync.MismatchError, TimeoutError, InvalidArgument, AbortedError, ... (the classes of the
// _ringsync module) with ringsync's message.
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "options_from_python.h"
#include "ringsync/errors.h"
#include "ringsync/mpi_environment.h"
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

// Every backend made here, so ringsync.torch can shut them all down at exit, before ringsync
// finalises MPI (torch keeps process groups alive until after the interpreter is gone).
class Registry {
 public:
  void add(const c10::intrusive_ptr<RingsyncBackend>& backend) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(backends_, [](const auto& weak) { return weak.expired(); });
    backends_.emplace_back(backend);
  }
  void shutdownAll() {
    std::vector<c10::weak_intrusive_ptr<RingsyncBackend>> backends;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      backends.swap(backends_);
    }
    for (auto& weak : backends)
      if (auto backend = weak.lock()) backend->shutdown();
  }

 private:
  std::mutex mutex_;
  std::vector<c10::weak_intrusive_ptr<RingsyncBackend>> backends_;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: backends may outlive static teardown
  return *instance;
}

void requireMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw BackendError("ringsync backend: MPI is not initialised (ringsync.init() first) or already finalised");
}

// Each process group runs its collectives on a progress thread of its own, or on whichever
// thread waits for them (DDP's hooks run on autograd's), while other groups' threads and the
// caller (mpi4py building a subgroup) may be in MPI at the same moment: MPI must allow concurrent
// calls. Checked before the communicator's collective construction, so a refused group hangs no rank.
void requireThreadLevel() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw BackendError(std::string("ringsync backend: MPI provides ") + threadLevelName(provided) +
                       ", but process groups run their collectives on progress threads of their own, "
                       "which may call MPI at the same time: MPI_THREAD_MULTIPLE is needed. Let "
                       "ringsync.init() initialise MPI, or initialise it with MPI_THREAD_MULTIPLE "
                       "(mpi4py's default)");
}

// rank/size: torch's view of the group; mpiComm: None (MPI_COMM_WORLD) or the Fortran handle of
// the group's MPI communicator (mpi4py's py2f()), duplicated by ringsync.
c10::intrusive_ptr<RingsyncBackend> makeBackend(int rank, int size, py::handle options, py::handle mpiComm) {
  requireMpi();
  requireThreadLevel();
  const Options resolved = optionsFromPython(options);
  const MPI_Comm parent = mpiComm.is_none() ? MPI_COMM_WORLD : MPI_Comm_f2c(mpiComm.cast<MPI_Fint>());
  std::unique_ptr<Communicator> comm;
  {
    py::gil_scoped_release release;  // collective over the group: let other Python threads run
    comm = std::make_unique<Communicator>(parent, resolved);
  }
  if (comm->rank() != rank || comm->size() != size)
    throw InvalidArgument("ringsync backend: torch says rank " + std::to_string(rank) + " of " + std::to_string(size) +
                          ", MPI says rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) +
                          "; launch with `mpirun -np N` and let ringsync.torch.init_process_group() take rank and "
                          "size from MPI (or pass rank=OMPI_COMM_WORLD_RANK, world_size=OMPI_COMM_WORLD_SIZE)");
  auto backend = c10::make_intrusive<RingsyncBackend>(rank, size, std::move(comm));
  registry().add(backend);
  return backend;
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
           py::arg("mpi_comm") = py::none(),
           "Collective over the group's ranks. options: a ringsync.Options; mpi_comm: None (MPI_COMM_WORLD) or "
           "an MPI Fortran handle (mpi4py's comm.py2f()). MPI must be initialised (ringsync.init()).")
      .def("shutdown", &RingsyncBackend::shutdown, py::call_guard<py::gil_scoped_release>(),
           "Finish queued collectives, stop the progress thread, free the communicator.")
      .def("__repr__", [](const RingsyncBackend& b) {
        return "ProcessGroupRingsync(rank=" + std::to_string(b.getRank()) + ", size=" + std::to_string(b.getSize()) +
               ")";
      });

  m.def("world_rank_and_size", &worldRankAndSize, "(rank, size) in MPI_COMM_WORLD (MPI initialised)");
  m.def("shutdown_all", [] { registry().shutdownAll(); }, py::call_guard<py::gil_scoped_release>(),
        "Shut down every ProcessGroupRingsync (at exit, before MPI is finalised).");
}
