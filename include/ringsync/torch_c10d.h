// ringsync as a c10d backend for libtorch programs that use c10d directly (target ringsync::torch,
// `find_package(ringsync REQUIRED COMPONENTS torch)`): the backend that ringsync.torch registers
// with torch.distributed in Python, here as a C++ c10d::ProcessGroup.
//
//   ringsync::MpiEnvironment mpi(&argc, &argv);        // MPI_THREAD_MULTIPLE
//   auto pg = ringsync::torch::makeProcessGroup();       // over MPI_COMM_WORLD
//   std::vector<at::Tensor> tensors{at::ones({4})};
//   pg->allreduce(tensors)->wait();                      // tensors[0] = size everywhere
//
// What the group carries:
//  - ringsync's own algorithms: allreduce (SUM, AVG, PRODUCT, MIN, MAX; coalesced too), broadcast,
//    reduce, allgather (list, single tensor, coalesced), reduce_scatter (list, single tensor,
//    coalesced), barrier; MPI's own non-blocking calls under ringsync's deadline: gather, scatter,
//    alltoall (list, single tensor); MPI point-to-point: send, recv, recv_anysource;
//    monitoredBarrier.
//  - Dense CPU tensors of int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32,
//    float64, bool (sum/max as logical or, product/min as logical and) and complex (sum, avg); a
//    non-contiguous tensor goes through a contiguous copy. CUDA tensors when both ringsync and
//    libtorch are CUDA builds, ordered on the caller's current stream of their device, as
//    ProcessGroupNCCL orders them.
// Errors:
//  - A bad call (a dtype, device, layout, size or root ringsync cannot carry) throws
//    ringsync::InvalidArgument naming the argument, on the caller's thread, before anything is sent
//    and before any tensor is touched.
//  - Failures found while the collective runs (ranks that disagree on the call: MismatchError naming
//    the ranks; a peer that does not answer within Options::timeoutSeconds: TimeoutError) are
//    rethrown, as ringsync's own exception, by the Work's wait(); the Work's future fails with a
//    std::runtime_error whose message starts with the error's kind ("MismatchError: ...").
//  - After a TimeoutError the group is aborted: later calls throw ringsync::AbortedError.
// Thread-safety: calls may come from any thread, as for any c10d backend; every rank must issue
// the group's collectives in the same order. Each group runs its collectives on a thread of its own
// (a synchronous call with nothing queued runs on the caller's).

#pragma once

#include <mpi.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "ringsync/communicator.h"
#include "ringsync/options.h"

namespace ringsync::torch {

// The c10d::Backend over `comm`'s ranks (torch's rank r is comm's rank r; its size is comm's size),
// on a duplicate of `comm` that it owns: the caller may free `comm` afterwards, and other traffic
// on it never meets the backend's.
// Collective over `comm`: every rank calls it, in the same order as its other collective calls on
// `comm`. Preconditions: MPI initialised with MPI_THREAD_MULTIPLE (ringsync::MpiEnvironment does
// so) and not finalised: BackendError otherwise, on every rank, before anything collective.
// InvalidArgument naming the field for options that fail Options::validate().
// Lifetime: the backend, and the communicator it made, must be released (the last reference
// dropped, or shutdown() called) before MPI is finalised; releasing it lets the queued collectives
// finish first.
c10::intrusive_ptr<::c10d::Backend> makeC10dBackend(MPI_Comm comm, const Options& options = Options::fromEnvironment());

// A c10d::ProcessGroup whose backend for CPU and CUDA tensors is makeC10dBackend(comm, options),
// set up as torch's own process group construction does for a registered backend (the default
// backend, bound to both device types); its collectives (pg->allreduce(tensors)->wait(), ...) go
// through torch's dispatcher to the ringsync backend. Same collective call, preconditions,
// exceptions and lifetime as makeC10dBackend. The group's store is a process-local
// c10d::HashStore: ringsync exchanges nothing through a store, so none is shared between ranks.
c10::intrusive_ptr<::c10d::ProcessGroup> makeProcessGroup(MPI_Comm comm = MPI_COMM_WORLD,
                                                          const Options& options = Options::fromEnvironment());

// The same over `comm`'s ranks and options (comm.mpiComm(), comm.options()). The group does not use
// `comm` itself afterwards: both may be used side by side, from different threads.
c10::intrusive_ptr<::c10d::ProcessGroup> makeProcessGroup(const Communicator& comm);

}  // namespace ringsync::torch
