// RingsyncBackend::split (torch.distributed.split_group): a new group over some of this group's
// ranks, made by its members only. Ranks outside it return null at once and call nothing.
//
// The members first meet through point-to-point messages under the deadline (so a member that
// never calls split is a TimeoutError naming it, and members that list different ranks get a
// MismatchError), then MPI_Comm_create_group (collective over the members only, never the whole
// parent) and a ringsync Communicator over it. It runs as a job on the group's progress thread, in
// order with the group's collectives on the same MPI communicator.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "abandoned_memory.h"
#include "backend_registry.h"
#include "blocking_wait.h"
#include "mpi_polling.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"

namespace ringsync::torch_backend {
namespace {

// Members' messages use a tag of the backend's own (PointToPoint refuses it to users).
std::uint64_t fingerprintOf(const std::vector<int>& ranks) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the ranks in order
  for (int r : ranks) {
    hash ^= static_cast<std::uint64_t>(r) + 0x9e3779b97f4a7c15ULL;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string listText(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

// What the members' messages read and write: on the heap, and kept for good when the meeting
// fails with messages still in flight (MPI may still complete them).
struct Meeting {
  explicit Meeting(std::size_t members) : theirs(members), requests(members, MPI_REQUEST_NULL) {}
  std::uint64_t mine = 0;
  std::uint64_t verdict = 1;
  std::vector<std::uint64_t> theirs;
  std::vector<MPI_Request> requests;  // the first member: one per member; the others: [0] sent, [1] answer
  MPI_Request answer = MPI_REQUEST_NULL;

  void abandon(const std::shared_ptr<Meeting>& self) {
    for (MPI_Request* r : all()) {
      if (*r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(r);  // a receive not yet matched ends here; a send or a matched one finishes in MPI
      MPI_Request_free(r);
    }
    keepUntilExit(self);
  }
  std::vector<MPI_Request*> all() {
    std::vector<MPI_Request*> pointers{&answer};
    for (MPI_Request& r : requests) pointers.push_back(&r);
    return pointers;
  }
};

// The first member hears from every other member, compares their rank lists with its own, and
// answers each with the verdict (1: same). Every member raises alike.
void meet(const MpiSide& side, const std::vector<int>& ranks, int tag, Meeting& m, MpiDeadline& deadline) {
  const int first = ranks[0];
  if (side.rank() == first) {
    for (std::size_t i = 1; i < ranks.size(); ++i)
      checkMpi(MPI_Irecv(&m.theirs[i], 1, MPI_UINT64_T, ranks[i], tag, side.comm(), &m.requests[i]), "MPI_Irecv");
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      deadline.wait(m.requests[i],
                    [&] { return "rank " + std::to_string(ranks[i]) + " (a member that did not call split)"; });
      if (m.theirs[i] != m.mine) m.verdict = 0;
    }
    for (std::size_t i = 1; i < ranks.size(); ++i)
      checkMpi(MPI_Isend(&m.verdict, 1, MPI_UINT64_T, ranks[i], tag, side.comm(), &m.requests[i]), "MPI_Isend");
    for (std::size_t i = 1; i < ranks.size(); ++i)
      deadline.wait(m.requests[i], [&] { return "rank " + std::to_string(ranks[i]); });
  } else {
    checkMpi(MPI_Isend(&m.mine, 1, MPI_UINT64_T, first, tag, side.comm(), &m.requests[0]), "MPI_Isend");
    checkMpi(MPI_Irecv(&m.verdict, 1, MPI_UINT64_T, first, tag, side.comm(), &m.answer), "MPI_Irecv");
    deadline.wait(m.answer, [&] { return "rank " + std::to_string(first) + " (the split's first member)"; });
    deadline.wait(m.requests[0], [&] { return "rank " + std::to_string(first); });
  }
}

void membersMeet(const MpiSide& side, const std::vector<int>& ranks, int tag) {
  MpiDeadline deadline(side.options(), "split_group over ranks " + listText(ranks));
  auto meeting = std::make_shared<Meeting>(ranks.size());
  meeting->mine = fingerprintOf(ranks);
  try {
    meet(side, ranks, tag, *meeting, deadline);
  } catch (...) {
    meeting->abandon(meeting);
    throw;
  }
  if (meeting->verdict != 1)
    throw MismatchError("ringsync backend: split_group: the members of " + listText(ranks) +
                        " passed different rank lists (this rank's is " + listText(ranks) + ")");
}

std::unique_ptr<Communicator> createMemberComm(const MpiSide& side, const std::vector<int>& ranks,
                                               const Options& options, int tag) {
  membersMeet(side, ranks, tag);
  MPI_Group parent = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MPI_Comm sub = MPI_COMM_NULL;
  checkMpi(MPI_Comm_group(side.comm(), &parent), "MPI_Comm_group");
  int code = MPI_Group_incl(parent, static_cast<int>(ranks.size()), ranks.data(), &members);
  MPI_Group_free(&parent);
  checkMpi(code, "MPI_Group_incl");
  code = MPI_Comm_create_group(side.comm(), members, tag, &sub);
  MPI_Group_free(&members);
  checkMpi(code, "MPI_Comm_create_group");
  try {
    auto comm = std::make_unique<Communicator>(sub, options);  // duplicates `sub`
    MPI_Comm_free(&sub);
    return comm;
  } catch (...) {
    MPI_Comm_free(&sub);
    throw;
  }
}

}  // namespace

c10::intrusive_ptr<::c10d::Backend> RingsyncBackend::split(const c10::intrusive_ptr<::c10d::Store>&,
                                                           const std::vector<int>& ranks,
                                                           const c10::intrusive_ptr<Options>& opts) {
  const auto me = std::find(ranks.begin(), ranks.end(), getRank());
  if (me == ranks.end()) return nullptr;  // not a member: nothing to make, no MPI call
  std::set<int> seen;
  for (int r : ranks)
    if (r < 0 || r >= getSize() || !seen.insert(r).second)
      throw InvalidArgument("ringsync backend: split_group ranks " + listText(ranks) +
                            " must be distinct ranks of "
                            "this group (0.." +
                            std::to_string(getSize() - 1) + ")");
  ringsync::Options options = communicator()->options();
  if (opts && opts->timeout.count() > 0) options.timeoutSeconds = static_cast<double>(opts->timeout.count()) / 1000.0;
  auto made = std::make_shared<std::unique_ptr<Communicator>>();
  const int tag = messages_->reservedTag(0);
  const CallerStream host({}, "split_group");
  auto work = submit(
      ::c10d::OpType::UNKNOWN, host, {},
      [made, mpi = mpi_, ranks, options, tag](Communicator&) { *made = createMemberComm(*mpi, ranks, options, tag); },
      /*asyncOp=*/true);
  {
    // The members' meeting can take until the deadline: the hook lets go of the GIL meanwhile.
    std::exception_ptr failure;
    blockingWait([&] {
      try {
        work->wait();
      } catch (...) {
        failure = std::current_exception();
      }
    });
    if (failure) std::rethrow_exception(failure);
  }
  const int groupRank = static_cast<int>(me - ranks.begin());
  auto child = c10::make_intrusive<RingsyncBackend>(groupRank, static_cast<int>(ranks.size()), std::move(*made));
  registerBackend(child);
  return child;
}

}  // namespace ringsync::torch_backend
