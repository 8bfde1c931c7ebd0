// Why POSIX shared memory and not MPI_Win_allocate_shared: freeing an MPI window is collective (Open
// MPI's osc/sm waits in a barrier), so a Communicator destroyed on one rank while the others are
// elsewhere (an exception unwinding a scope, a fault handler on its way to MPI_Abort) would hang.
// Here only creation is collective (inside the Communicator's constructor, like MPI_Comm_dup);
// the name is unlinked as soon as every rank has mapped it, and each rank unmaps on its own.
#include "shared_slots.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mpi_check.h"

namespace ringsync::detail {
namespace {

constexpr std::size_t kPageBytes = 4096;
constexpr int kNameBytes = 64;

std::byte* mapSegment(int fd, std::size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : static_cast<std::byte*>(base);
}

// Rank 0 creates and sizes the segment; returns its mapping (null on failure) and its name.
std::byte* createSegment(std::size_t bytes, char (&name)[kNameBytes]) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::snprintf(name, sizeof name, "/ringsync-%d-%u", static_cast<int>(getpid()), counter++);
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) continue;  // a stale name from an earlier process with the same pid: try the next
    std::byte* base = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? mapSegment(fd, bytes) : nullptr;
    close(fd);
    if (!base) shm_unlink(name);
    return base;
  }
  name[0] = '\0';
  return nullptr;
}

std::byte* openSegment(std::size_t bytes, const char* name) {
  const int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) return nullptr;
  std::byte* base = mapSegment(fd, bytes);
  close(fd);
  return base;
}

// Ranks on the node against the CPUs they may use together (the union of their affinity masks:
// a rank bound to one core still shares the node's CPUs with the others).
bool nodeOversubscribed(MPI_Comm comm, int ranks) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return false;
  std::vector<unsigned char> bits(sizeof mine);
  std::memcpy(bits.data(), &mine, sizeof mine);
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(bits.size()), MPI_UNSIGNED_CHAR,
                                   MPI_BOR, comm));
  cpu_set_t all;
  std::memcpy(&all, bits.data(), sizeof all);
  return ranks > CPU_COUNT(&all);
}

}  // namespace

std::unique_ptr<SharedSlots> SharedSlots::create(MPI_Comm comm, std::size_t bytesPerRank) {
  int rank = 0, size = 1, nodeSize = 0;
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(comm, &size));
  MPI_Comm node = MPI_COMM_NULL;
  RINGSYNC_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(node, &nodeSize));
  RINGSYNC_CHECK_MPI(MPI_Comm_free(&node));
  if (nodeSize != size || size < 2) return nullptr;  // every rank sees the same sizes: same verdict

  const std::size_t perRank = (bytesPerRank + kPageBytes - 1) / kPageBytes * kPageBytes;
  const std::size_t bytes = perRank * static_cast<std::size_t>(size);
  // Every rank must lay the segment out alike; ranks with other settings use point-to-point.
  unsigned long long range[2] = {perRank, ~static_cast<unsigned long long>(perRank)};
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
  if (range[0] != perRank || ~range[1] != perRank) return nullptr;
  char name[kNameBytes] = {};
  std::byte* base = rank == 0 ? createSegment(bytes, name) : nullptr;
  RINGSYNC_CHECK_MPI(MPI_Bcast(name, kNameBytes, MPI_CHAR, 0, comm));
  if (rank != 0 && name[0] != '\0') base = openSegment(bytes, name);
  int mapped = base ? 1 : 0;
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && name[0] != '\0') shm_unlink(name);  // every rank has opened it (or given up)
  if (!mapped) {
    if (base) munmap(base, bytes);
    return nullptr;
  }
  // Touch this rank's own region now: first-touch faults are slow here and belong outside calls.
  std::memset(base + static_cast<std::size_t>(rank) * perRank, 0, perRank);
  const bool oversubscribed = nodeOversubscribed(comm, size);
  RINGSYNC_CHECK_MPI(MPI_Barrier(comm));  // no rank publishes before every region is zeroed
  return std::unique_ptr<SharedSlots>(new SharedSlots(base, bytes, perRank, oversubscribed));
}

SharedSlots::~SharedSlots() { munmap(base_, bytes_); }

}  // namespace ringsync::detail
