// Rabenseifner's all-reduce and its two halves, among the m members of a DoublingGroup: a
// reduce-scatter by recursive halving, then an all-gather by recursive doubling (Rabenseifner 2004;
// MPICH's all-reduce for mid-sized messages), log2 steps each instead of the ring's m-1, each
// member sending and receiving (p-1)/p of the data per half, as the ring does:
//
//   reduce-scatter, step k = 0 .. q-1 (p = 2^q <= m, partner = member ^ 2^k): of the positions it
//     holds, a member keeps one half (the lower when bit k of its number is 0), sends the other to
//     its partner and reduces the partner's copy of the half it keeps: S/2, S/4, ... per step;
//     member i ends with position bitreverse(i)
//   all-gather: the same steps, in reverse order for the all-reduce (the halves grow back),
//     copying the finished positions into place
//
//   m not a power of two, e = m - p: the standard pre/post step, as recursive doubling's
//   (recursive_doubling.h): member p+i first sends its whole contribution to member i (i < e),
//   which folds it in (op(mine, its)), and gets its result from member i at the end.
//
//     T = 2q·alpha + 2(p-1)/p·S·beta + (p-1)/p·S·gamma  (+ 2·alpha + 2S·beta + S·gamma when e > 0)
//
// Positions are the all-reduce's chunks (chunk_layout.h, p of them), or for the halves alone the
// blocks of each member (its own block and, for member i < e, member p+i's), in an order that
// leaves every member with its own blocks. Each position is reduced along one order, the lower
// member's partial first (op(lower, higher)), by the member that ends with it, and copied to the
// others: every member holds the same bits. kAvg: the caller sums (op = kSum) and passes the
// divisor; the owner divides its position once, before the all-gather copies it.
//
// Every message carries the sender's call summary (summary_messages.h), in recursive doubling's
// format and with its partners in its order (the fold, then partners at distance 1, 2, 4, ...) up
// to the check, so the reduce-scatter ends with every member holding every member's call and
// members of either algorithm reach the same verdict. The caller's output is written only after
// that check (the all-reduce's all-gather and the all-gather's results then go straight into it);
// on a disagreement the folded members get the verdict and nothing else moves. Until the check
// every byte sent comes from memory this object owns (the caller's input is copied into `work`
// first where it would be sent), so that a call abandoned with sends in flight can leave that
// memory to MPI (sendsLeftInFlight()).
#pragma once

#include <cstddef>
#include <vector>

#include "recursive_doubling.h"
#include "scratch_buffer.h"
#include "summary_messages.h"

namespace ringsync::detail {

class Butterfly {
 public:
  // `work`: the member's working copy of the data (grown as needed), kept for the communicator's life.
  Butterfly(const DoublingGroup& group, DoublingBuffers& buffers, ScratchBuffer& work, const CallHeader& mine,
            CallSummary& summary, Deadline& deadline);

  // Each returns false, its output untouched, when the summary shows ranks in different calls
  // (every member returns the same). op is never kAvg; divisor > 1 divides the result once.
  //   allreduce      input: count elements (may be work(count·size)); output: count elements
  //   reduceScatter  input: m blocks of count elements, in member order; output: this member's block
  //   allgather      input: this member's block of count; output: m blocks (input may be its own)
  bool allreduce(const void* input, void* output, std::size_t count, DataType type, ReduceOp op, int divisor);
  bool reduceScatter(const void* input, void* output, std::size_t count, DataType type, ReduceOp op, int divisor);
  bool allgather(const void* input, void* output, std::size_t count, DataType type);

  // The working copy, at least `bytes` long: a caller may build the all-reduce's input in it.
  std::byte* work(std::size_t bytes);
  // Runs `fn` (this butterfly's calls); a failure that left sends or receives in flight in `work`
  // (the caller's scratch) leaves that memory to MPI (a late message would otherwise read or land
  // in a later call's data).
  template <typename Fn> void guarded(Fn&& fn) {
    try {
      fn();
    } catch (...) {
      if (workLeftToMpi_) work_.abandon();
      throw;
    }
  }

 private:
  struct Step {
    int partner;
    int lo, hi;  // the positions held before the step
    int keepLo, keepHi;
  };
  // Element offsets of the p positions in the work array (p + 1 entries).
  using Offsets = std::vector<std::size_t>;
  Offsets chunkOffsets(std::size_t count) const;
  Offsets blockOffsets(std::size_t count, bool bitReversed) const;
  int positionOf(int member, bool bitReversed) const;
  int blocksAt(int position, bool bitReversed) const;

  bool halve(const std::byte* input, const Offsets& offsets, DataType type, ReduceOp op, std::vector<Step>& steps);
  void fold(const std::byte* input, std::size_t count, DataType type, ReduceOp op);
  void gatherBack(std::byte* output, const Offsets& offsets, std::size_t elementBytes, const std::vector<Step>& steps);
  void tellFolded(const std::byte* payload, std::size_t bytes);
  bool takeFromFolded(std::byte* output, std::size_t bytes);
  SummaryMessages::Received exchange(int partner, bool send, SummaryMessages::Outgoing out, bool receive,
                                     const SummaryMessages::Incoming& in);

  DoublingGroup group_;
  SummaryMessages messages_;
  ScratchBuffer& work_;
  CallSummary& summary_;
  int p_ = 1, q_ = 0, extras_ = 0;
  bool workLeftToMpi_ = false;
};

}  // namespace ringsync::detail
