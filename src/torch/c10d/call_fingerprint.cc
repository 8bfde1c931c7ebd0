#include "call_fingerprint.h"

#include <memory>
#include <sstream>

#include <c10/core/ScalarType.h>

#include "abandoned_memory.h"
#include "ringsync/errors.h"
#include "ringsync/types.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

// Polls `request` (writing into `memory`); at the deadline the memory stays MPI's for good, and so
// does the request (a non-blocking collective's request may not be freed while active).
void waitKeeping(MPI_Request& request, MpiDeadline& deadline, const std::shared_ptr<const void>& memory,
                 const std::string& what, int size) {
  try {
    deadline.wait(request, [&] { return what + " of the group's " + std::to_string(size) + " ranks"; });
  } catch (...) {
    keepUntilExit(memory);
    throw;
  }
}

}  // namespace

std::string describe(const CallFingerprint& call) {
  std::ostringstream text;
  text << ::c10d::opTypeToString(static_cast<::c10d::OpType>(call.kind)) << " #" << call.sequence << " (";
  if (call.root >= 0) text << "root " << call.root << ", ";
  if (call.op >= 0) text << "op " << reduceOpName(static_cast<ReduceOp>(call.op)) << ", ";
  if (call.dtype >= 0) text << dtypeName(static_cast<at::ScalarType>(call.dtype)) << " x ";
  text << call.count << ")";
  return text.str();
}

void agreeOnCall(MPI_Comm comm, const CallFingerprint& mine, MpiDeadline& deadline) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  auto all = std::make_shared<std::vector<CallFingerprint>>(static_cast<std::size_t>(size));
  auto sent = std::make_shared<CallFingerprint>(mine);
  MPI_Request request = MPI_REQUEST_NULL;
  checkMpi(MPI_Iallgather(sent.get(), sizeof(CallFingerprint), MPI_BYTE, all->data(), sizeof(CallFingerprint), MPI_BYTE,
                          comm, &request),
           "MPI_Iallgather(fingerprints)");
  waitKeeping(request, deadline, std::make_shared<std::pair<decltype(all), decltype(sent)>>(all, sent),
              "the fingerprints", size);
  std::ostringstream differ;
  bool same = true;
  for (int r = 0; r < size; ++r) {
    if ((*all)[static_cast<std::size_t>(r)] == (*all)[0]) continue;
    same = false;
    differ << ", rank " << r << ": " << describe((*all)[static_cast<std::size_t>(r)]);
  }
  if (!same)
    throw MismatchError("ringsync backend: ranks made different calls: rank 0: " + describe((*all)[0]) + differ.str());
}

void agreeOnCounts(MPI_Comm comm, const std::vector<std::int64_t>& sendCounts,
                   const std::vector<std::int64_t>& recvCounts, MpiDeadline& deadline) {
  const int size = static_cast<int>(sendCounts.size());
  // sent[r]: what rank r sends this rank. Then every rank's verdict (first disagreeing peer), so
  // that all raise alike.
  auto sent = std::make_shared<std::vector<std::int64_t>>(sendCounts.size());
  auto mine = std::make_shared<std::vector<std::int64_t>>(sendCounts);
  MPI_Request request = MPI_REQUEST_NULL;
  checkMpi(MPI_Ialltoall(mine->data(), 1, MPI_INT64_T, sent->data(), 1, MPI_INT64_T, comm, &request),
           "MPI_Ialltoall(counts)");
  waitKeeping(request, deadline, std::make_shared<std::pair<decltype(sent), decltype(mine)>>(sent, mine), "the counts",
              size);
  auto verdict = std::make_shared<std::vector<std::int64_t>>(3, -1);
  for (int r = 0; r < size; ++r) {
    if ((*sent)[static_cast<std::size_t>(r)] == recvCounts[static_cast<std::size_t>(r)]) continue;
    *verdict = {r, (*sent)[static_cast<std::size_t>(r)], recvCounts[static_cast<std::size_t>(r)]};
    break;
  }
  auto verdicts = std::make_shared<std::vector<std::int64_t>>(3 * static_cast<std::size_t>(size));
  checkMpi(MPI_Iallgather(verdict->data(), 3, MPI_INT64_T, verdicts->data(), 3, MPI_INT64_T, comm, &request),
           "MPI_Iallgather(verdicts)");
  waitKeeping(request, deadline, std::make_shared<std::pair<decltype(verdict), decltype(verdicts)>>(verdict, verdicts),
              "the count verdicts", size);
  for (int r = 0; r < size; ++r) {
    const std::int64_t* v = verdicts->data() + 3 * static_cast<std::size_t>(r);
    if (v[0] < 0) continue;
    throw MismatchError("ringsync backend: " + deadline.call() + ": rank " + std::to_string(v[0]) + " sends " +
                        std::to_string(v[1]) + " elements to rank " + std::to_string(r) + ", which expects " +
                        std::to_string(v[2]) + " (input_split_sizes and output_split_sizes disagree)");
  }
}

}  // namespace ringsync::torch_backend
