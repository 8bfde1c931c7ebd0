// ringsync::Communicator: all-reduce, reduce-scatter, all-gather, broadcast and barrier among the
// ranks of an MPI communicator. Host buffers go through ringsync's segmented ring over MPI point-to-point;
// device buffers go through NCCL, or are staged through host memory when NCCL cannot serve them.
//
// Contract, shared by every collective:
//  - Every rank calls the same collectives in the same order. A disagreement (kind, count, type,
//    op, root, order) raises MismatchError on every rank, naming the ranks and both calls.
//  - Results are bit-identical on every rank.
//  - A peer that does not answer within Options::timeoutSeconds (RINGSYNC_TIMEOUT_SECONDS) raises
//    TimeoutError naming the call and the peer; the communicator is then aborted and every later
//    call raises AbortedError.
//  - Bad arguments raise InvalidArgument before any buffer is touched or any byte is sent.
//  - Host-buffer calls block until the result is in `recv`. Device-buffer calls with a stream are
//    ordered on that stream (like NCCL); without one (nullptr) they complete before returning.
//    Host buffers ignore the stream.
//  - Any count: 0, fewer elements than ranks, more than 2^31. Every DataType with every ReduceOp;
//    float16 and bfloat16 accumulate each step in float32; integer sums and products wrap.
//  - Device buffers go through NCCL when every rank has a GPU of its own (bootstrapped over MPI on
//    first use), otherwise every rank stages them through pinned host memory and the host
//    algorithms. Where the process sees no NVIDIA driver, host-buffer calls make no CUDA call.
//  - Not thread-safe: one thread at a time per Communicator (use duplicate() for another thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <mpi.h>

#include "ringsync/options.h"
#include "ringsync/types.h"

// CUDA's cudaStream_t is `CUstream_st*`; naming the struct keeps this header free of CUDA.
struct CUstream_st;

namespace ringsync {

namespace detail {
class CoreAccess;
}

// Where the last collective ran (what RINGSYNC_LOG=info prints, like log_device_placement).
struct Placement {
  std::string backend;    // "host-ring", "nccl", "staged"
  std::string algorithm;  // "ring", "direct", "split", "chain", "nccl", ...
  int device = -1;        // CUDA device for device buffers, -1 for host buffers
};

class Communicator {
 public:
  // Duplicates `comm` (MPI_Comm_dup) so ringsync's traffic never mixes with the caller's.
  // Collective over `comm`. MPI must be initialised (see MpiEnvironment); it is never finalised here.
  explicit Communicator(MPI_Comm comm, const Options& options = Options::fromEnvironment());
  ~Communicator();  // frees the duplicated communicator; never throws

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  int localRank() const;  // rank among the ranks on this node (MPI_COMM_TYPE_SHARED)
  int localSize() const;
  // The GPU this rank uses for device buffers (NCCL, staging): RINGSYNC_CUDA_DEVICE when set, else
  // localRank() modulo the GPUs visible; -1 when the build has no CUDA or the process sees no GPU.
  // Trainers and benches place their device memory here so that it matches the communicator.
  int cudaDevice() const;

  // recv = op over all ranks of send. `send == recv` means in place; any other overlap is rejected.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 CUstream_st* stream = nullptr);

  // MPI_Reduce_scatter_block: `send` holds size() blocks of `recvCount` elements; rank r receives
  // block r of op over all ranks (kAvg divides once, as allreduce does). In place when `recv` is
  // this rank's block of `send` (send + rank() * recvCount elements); any other overlap is rejected.
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                     CUstream_st* stream = nullptr);

  // recv[r * sendCount .. (r+1) * sendCount) = send of rank r (MPI_Allgather). In place when `send`
  // is this rank's block of `recv`; any other overlap is rejected.
  void allgather(const void* send, void* recv, std::size_t sendCount, DataType type, CUstream_st* stream = nullptr);

  // Copies `count` elements of root's `buf` into every rank's `buf`.
  void broadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream = nullptr);

  void barrier();

  // A new communicator over the same ranks with its own traffic and sequence (collective).
  Communicator duplicate() const;

  const Options& options() const;
  MPI_Comm mpiComm() const;         // the duplicated communicator (do not free it)
  int mpiThreadLevel() const;       // what MPI_Query_thread reported at construction
  std::uint64_t callCount() const;  // collectives started so far (the next call's number)
  bool aborted() const;
  std::string abortReason() const;
  Placement lastPlacement() const;

  class Impl;  // opaque; the core, defined in src/communicator_impl.h

 private:
  friend class detail::CoreAccess;  // the library's own layers above the core (src/core_access.h)
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringsync
