// <ringsync/torch_c10d.h>: the backend and a ProcessGroup around it, for C++ programs.
#include "ringsync/torch_c10d.h"

#include <memory>
#include <utility>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "mpi_requirements.h"
#include "ringsync_backend.h"

namespace ringsync::torch {

c10::intrusive_ptr<::c10d::Backend> makeC10dBackend(MPI_Comm comm, const Options& options) {
  // Checked before the communicator's collective construction, so a refused group hangs no rank.
  torch_backend::requireMpi();
  torch_backend::requireThreadLevel();
  auto communicator = std::make_unique<Communicator>(comm, options);
  const int rank = communicator->rank();
  const int size = communicator->size();
  return c10::make_intrusive<torch_backend::RingsyncBackend>(rank, size, std::move(communicator));
}

// As torch.distributed does for a backend registered with devices=["cpu", "cuda"] (what
// ringsync.torch registers): one backend object, the group's default, for both device types.
c10::intrusive_ptr<::c10d::ProcessGroup> makeProcessGroup(MPI_Comm comm, const Options& options) {
  c10::intrusive_ptr<::c10d::Backend> backend = makeC10dBackend(comm, options);
  auto group = c10::make_intrusive<::c10d::ProcessGroup>(c10::make_intrusive<::c10d::HashStore>(), backend->getRank(),
                                                         backend->getSize());
  constexpr auto kCustom = ::c10d::ProcessGroup::BackendType::CUSTOM;
  group->setDefaultBackend(kCustom);
  group->setBackend(c10::DeviceType::CPU, kCustom, backend);
  group->setBackend(c10::DeviceType::CUDA, kCustom, backend);
  return group;
}

c10::intrusive_ptr<::c10d::ProcessGroup> makeProcessGroup(const Communicator& comm) {
  return makeProcessGroup(comm.mpiComm(), comm.options());
}

}  // namespace ringsync::torch
