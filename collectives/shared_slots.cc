// Why POSIX shared memory and not MPI_Win_allocate_shared: freeing an MPI window is collective (Open
// MPI's osc/sm waits in a barrier), so a Communicator destroyed on one rank while the others are
// elsewhere (an exception unwinding a scope, a fault handler on its way to MPI_Abort) would hang.
// Here only creation is collective (inside the Communicator's constructor, like MPI_Comm_dup);
// the name is unlinked as soon as every rank has mapped it, and each rank unmaps on its own.
//
// Why posix_fallocate: a segment sized with ftruncate alone is sparse on tmpfs, and touching a page
// that /dev/shm has no room for kills the process with SIGBUS (the 4th communicator of a 2-rank
// job in a container's 64 MB). Reserved up front, a shortage is ENOSPC at creation: rank 0 then
// tries the next smaller size the caller offered, or gives up, and every rank learns which.
#include "shared_slots.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "mpi_check.h"

namespace ringsync::detail {
namespace {

constexpr std::size_t kPageBytes = 4096;
constexpr int kNameBytes = 64;
constexpr const char* kShmDirectory = "/dev/shm";  // where glibc's shm_open keeps its segments
// Where /dev/shm is short, a communicator takes the largest size offered that still leaves room for
// this many more communicators of the smallest size: the first ones of a program (its main
// communicator, an averager's) keep full-size rounds for as long as they can without starving the
// later ones (torch groups, more averagers) of shared memory altogether.
constexpr std::size_t kSpareCommunicators = 16;

// What rank 0 tells the others: the segment's name ("" when there is none) and its size's index.
struct Created {
  char name[kNameBytes] = {};
  std::uint64_t choice = 0;
};

std::string mebibytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// What statvfs says of /dev/shm: its free bytes (when known) and "/dev/shm has 3.2 MiB free of 64.0 MiB".
struct ShmSpace {
  bool known = false;
  std::size_t free = 0;
  std::string text;
};

ShmSpace shmSpace() {
  struct statvfs fs {};
  if (statvfs(kShmDirectory, &fs) != 0) return {false, 0, std::string(kShmDirectory) + " (free space unknown)"};
  const std::size_t free = static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize;
  return {true, free,
          std::string(kShmDirectory) + " has " + mebibytes(free) + " free of " +
              mebibytes(static_cast<std::size_t>(fs.f_blocks) * fs.f_frsize)};
}

std::mutex noticeMutex;
bool shortageSeen = false;  // the first shortage of the process is reported, no later one
std::string pendingNotice;

void noteShortage(const std::string& text) {
  std::lock_guard<std::mutex> lock(noticeMutex);
  if (shortageSeen) return;
  shortageSeen = true;
  pendingNotice = text;
}

std::byte* mapSegment(int fd, std::size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : static_cast<std::byte*>(base);
}

// A new segment of `bytes` whose memory is reserved, mapped; null with *error set when it cannot be.
std::byte* reserveSegment(std::size_t bytes, char (&name)[kNameBytes], int* error) {
  static std::atomic<unsigned> counter{0};
  *error = EEXIST;
  for (int attempt = 0; attempt < 8 && *error == EEXIST; ++attempt) {
    std::snprintf(name, sizeof name, "/ringsync-%d-%u", static_cast<int>(getpid()), counter++);
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      *error = errno;  // EEXIST: a stale name from an earlier process with the same pid, try the next
      continue;
    }
    *error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));  // returns the error, not errno
    std::byte* base = *error == 0 ? mapSegment(fd, bytes) : nullptr;
    if (*error == 0 && !base) *error = errno;
    close(fd);
    if (base) return base;
    shm_unlink(name);
    return nullptr;
  }
  return nullptr;
}

// The first of `totals` (largest first) rank 0 tries: the largest that leaves room in /dev/shm
// for kSpareCommunicators more communicators of the smallest size; the smallest if none does.
std::size_t firstToTry(const std::vector<std::size_t>& totals, const ShmSpace& space) {
  if (!space.known) return 0;  // try them all
  const std::size_t spare = kSpareCommunicators * totals.back();
  std::size_t i = 0;
  while (i + 1 < totals.size() && totals[i] + spare > space.free) ++i;
  return i;
}

// Rank 0: a segment of one of `totals` (firstToTry's, or a smaller one where reserving it fails
// for want of space), its index in *choice; null (name "") when none fits or none can be made.
std::byte* createSegment(const std::vector<std::size_t>& totals, int ranks, char (&name)[kNameBytes],
                         std::size_t* choice) {
  const ShmSpace space = shmSpace();
  const std::string who = "a communicator of " + std::to_string(ranks) + " ranks on this node";
  int error = ENOSPC;
  for (std::size_t i = firstToTry(totals, space); i < totals.size() && error == ENOSPC; ++i) {
    if (space.known && totals[i] > space.free) continue;  // cannot fit: not worth reserving to find out
    std::byte* base = reserveSegment(totals[i], name, &error);
    if (!base) continue;
    *choice = i;
    if (i > 0)
      noteShortage(space.text + ": " + who + " shares " + mebibytes(totals[i]) + " of memory instead of the " +
                   mebibytes(totals[0]) + " its rounds would use (leaving room for " +
                   std::to_string(kSpareCommunicators) +
                   " more), so fewer messages take the shared-memory rounds (README: /dev/shm); said once per "
                   "process");
    return base;
  }
  const std::string why = error == ENOSPC
                              ? "not enough for " + who + " (at least " + mebibytes(totals.back()) + ")"
                              : "cannot create a segment there for " + who + " (" + std::strerror(error) + ")";
  noteShortage(space.text + ": " + why +
               "; its rounds go through MPI point-to-point (README: /dev/shm); said once per "
               "process");
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
  RINGSYNC_CHECK_MPI(
      MPI_Allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(bits.size()), MPI_UNSIGNED_CHAR, MPI_BOR, comm));
  cpu_set_t all;
  std::memcpy(&all, bits.data(), sizeof all);
  return ranks > CPU_COUNT(&all);
}

// Whether every rank offers the same sizes (the largest, the smallest and how many).
bool sameOffer(MPI_Comm comm, const std::vector<std::size_t>& perRank) {
  const unsigned long long mine[3] = {perRank.front(), perRank.back(), perRank.size()};
  unsigned long long range[6];
  for (int i = 0; i < 3; ++i) range[i] = mine[i], range[3 + i] = ~mine[i];
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, range, 6, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
  for (int i = 0; i < 3; ++i)
    if (range[i] != mine[i] || ~range[3 + i] != mine[i]) return false;
  return true;
}

}  // namespace

std::unique_ptr<SharedSlots> SharedSlots::create(MPI_Comm comm, const std::vector<std::size_t>& regionBytes) {
  int rank = 0, size = 1, nodeSize = 0;
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(comm, &size));
  MPI_Comm node = MPI_COMM_NULL;
  RINGSYNC_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(node, &nodeSize));
  RINGSYNC_CHECK_MPI(MPI_Comm_free(&node));
  if (nodeSize != size || size < 2 || regionBytes.empty()) return nullptr;  // the same verdict on every rank

  std::vector<std::size_t> perRank, totals;
  for (std::size_t bytes : regionBytes) {
    perRank.push_back((bytes + kPageBytes - 1) / kPageBytes * kPageBytes);
    totals.push_back(perRank.back() * static_cast<std::size_t>(size));
  }
  // Every rank must lay the segment out alike; ranks with other settings use point-to-point.
  if (!sameOffer(comm, perRank)) return nullptr;
  Created created;
  std::size_t choice = 0;
  std::byte* base = rank == 0 ? createSegment(totals, size, created.name, &choice) : nullptr;
  created.choice = choice;
  RINGSYNC_CHECK_MPI(MPI_Bcast(&created, sizeof created, MPI_BYTE, 0, comm));
  choice = static_cast<std::size_t>(created.choice);
  const bool named = created.name[0] != '\0' && choice < totals.size();
  if (rank != 0 && named) base = openSegment(totals[choice], created.name);
  int mapped = base ? 1 : 0;
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && named) shm_unlink(created.name);  // every rank has opened it (or given up)
  if (!mapped) {
    if (base) munmap(base, totals[choice]);
    return nullptr;
  }
  // Touch this rank's own region now: first-touch faults are slow here and belong outside calls.
  std::memset(base + static_cast<std::size_t>(rank) * perRank[choice], 0, perRank[choice]);
  const bool oversubscribed = nodeOversubscribed(comm, size);
  RINGSYNC_CHECK_MPI(MPI_Barrier(comm));  // no rank publishes before every region is zeroed
  return std::unique_ptr<SharedSlots>(new SharedSlots(base, totals[choice], perRank[choice], choice, oversubscribed));
}

SharedSlots::~SharedSlots() { munmap(base_, bytes_); }

std::string SharedSlots::takeShortageNotice() {
  std::lock_guard<std::mutex> lock(noticeMutex);
  std::string notice;
  notice.swap(pendingNotice);
  return notice;
}

}  // namespace ringsync::detail
