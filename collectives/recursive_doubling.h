// Recursive doubling: every member of a group ends with the reduction of every member's
// contribution, in log2(m) exchanges of the whole contribution with one partner each (latency
// log2(m)·α, against the ring's 2(m-1)·α and the direct exchange's m-1 messages per rank):
//
//   step 0:  0 <-> 1    2 <-> 3        each pair combines: lower member's partial first
//   step 1:  0 <-> 2    1 <-> 3        (op(lower, higher), so both partners hold the same bits)
//
// m not a power of two, p the largest power of two below it: member p+i first sends its
// contribution to member i, which folds it in (op(mine, its)); the p members double; member i
// sends the result back to p+i at the end. Every member holds bit-identical results.
//
// Every message is [CallHeader | CallSummary | payload], sent in parts of at most kPartBytes
// (Open MPI's eager limit over TCP); the first part's receive is posted before sending, the rest
// are taken with it whatever happens.
// The summary (call_summary.h) is merged at every step, so at the end every member holds the calls
// of every member; the caller checks it. A message from an earlier call (left behind when that
// call was abandoned for a mismatch) is recognised by its sequence number and dropped. No part is
// longer than kPartBytes, so a peer in another call that sends more than expected cannot overrun
// a buffer.
#pragma once

#include <cstddef>
#include <exception>
#include <vector>

#include <mpi.h>

#include "call_summary.h"
#include "ringsync/types.h"
#include "scratch_buffer.h"
#include "transport.h"

namespace ringsync::detail {

// What recursive doubling sends from and receives into, kept for the communicator's life. A call
// abandoned while a send or receive was in flight leaves that memory to MPI (abandon(): never
// freed or reused), so a late transfer reads the call's own header and cannot land in a later
// call's data.
struct DoublingBuffers {
  ScratchBuffer message;
  ScratchBuffer incoming;
  ScratchBuffer spare;  // where the parts of a message longer than this call's go (then dropped)
};

struct DoublingGroup {
  MPI_Comm comm;
  int member;  // this rank's place in comm
  int members;
  const std::vector<int>* globalRanks = nullptr;  // member -> rank the errors name (null: the member)
};

class RecursiveDoubling {
 public:
  static constexpr std::size_t kPrefixBytes = sizeof(CallHeader) + sizeof(CallSummary);
  // The longest message sent whole; longer ones go in parts of this size (recursive_doubling.cc).
  // Open MPI's TCP path sends up to btl_tcp_eager_limit (64 KiB with its own headers) at once and
  // anything longer by rendezvous, whose reply waits behind the data queued the other way.
  static constexpr std::size_t kPartBytes = 63 * 1024;

  RecursiveDoubling(const DoublingGroup& group, DoublingBuffers& buffers, std::size_t payloadBytes);
  // Where the caller writes this member's contribution (payloadBytes), and finds the result.
  std::byte* payload() { return buffers_.message.data() + kPrefixBytes; }

  // Reduces the payloads of every member (count elements each) and merges `summary` (this
  // member's so far) with every member's. Combining stops, the exchanges go on, as soon as the
  // summary shows ranks in different calls: the verdict must still reach every member.
  void run(const CallHeader& mine, CallSummary& summary, std::size_t count, DataType type, ReduceOp op,
           Deadline& deadline);

 private:
  enum class Combine { kNone, kMineFirst, kTheirsFirst, kTake };
  void exchange(int partner, bool send, bool receive, Combine combine, Deadline& deadline);
  void postFirstPart(int partner);
  MPI_Status waitForFirstPart(int partner, Deadline& deadline);
  void receiveFrom(int partner, Deadline& deadline);
  std::exception_ptr withdrawFirstPart(int partner, Deadline& deadline) noexcept;
  std::size_t receiveParts(int partner, std::size_t firstBytes, Deadline& deadline);
  int nameOf(int member) const;

  DoublingGroup group_;
  DoublingBuffers& buffers_;
  std::size_t payloadBytes_;
  // Of the call in progress.
  CallHeader mine_{};
  CallSummary* summary_ = nullptr;
  std::size_t count_ = 0;
  DataType type_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  MPI_Request firstPart_ = MPI_REQUEST_NULL;  // the partner's first part, posted before sending
  CallSummary received_{};                    // the summary of the last message received
  std::size_t receivedPayloadBytes_ = 0;
};

}  // namespace ringsync::detail
