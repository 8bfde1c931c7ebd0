#include "butterfly.h"

#include <cstring>
#include <string>

#include "chunk_layout.h"
#include "reduce_kernels.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

using Received = SummaryMessages::Received;
using Incoming = SummaryMessages::Incoming;

int reverseBits(int value, int bits) {
  int reversed = 0;
  for (int i = 0; i < bits; ++i) reversed |= ((value >> i) & 1) << (bits - 1 - i);
  return reversed;
}

void copyBytes(std::byte* target, const std::byte* source, std::size_t bytes) {
  if (bytes > 0 && target != source) std::memcpy(target, source, bytes);
}

// Where a received payload goes: the parts after the first land in place, the first is copied.
auto placeInto(std::byte* target) {
  return [target](std::size_t begin, std::size_t end, const std::byte* data) {
    copyBytes(target + begin, data, end - begin);
  };
}

}  // namespace

Butterfly::Butterfly(const DoublingGroup& group, DoublingBuffers& buffers, ScratchBuffer& work, const CallHeader& mine,
                     CallSummary& summary, Deadline& deadline)
    : group_(group), messages_(group, buffers, mine, summary, deadline), work_(work), summary_(summary) {
  while (p_ * 2 <= group.members) {
    p_ *= 2;
    ++q_;
  }
  extras_ = group.members - p_;
}

std::byte* Butterfly::work(std::size_t bytes) {
  work_.reserve(bytes);
  return work_.data();
}

SummaryMessages::Received Butterfly::exchange(int partner, bool send, SummaryMessages::Outgoing out, bool receive,
                                              const SummaryMessages::Incoming& in) {
  try {
    return messages_.exchange(partner, send, out, receive, in);
  } catch (...) {
    workLeftToMpi_ = workLeftToMpi_ || messages_.callerMemoryLeftToMpi();
    throw;
  }
}

Butterfly::Offsets Butterfly::chunkOffsets(std::size_t count) const {
  const ChunkLayout chunks(count, p_);
  Offsets offsets(static_cast<std::size_t>(p_) + 1);
  for (int s = 0; s <= p_; ++s) offsets[static_cast<std::size_t>(s)] = s < p_ ? chunks.begin(s) : count;
  return offsets;
}

// The halves alone: position s holds the blocks of member positionOf^-1(s), its own and (for a
// member that folded one in) member p+i's, back to back.
int Butterfly::positionOf(int member, bool bitReversed) const { return bitReversed ? reverseBits(member, q_) : member; }
int Butterfly::blocksAt(int position, bool bitReversed) const {
  const int member = bitReversed ? reverseBits(position, q_) : position;  // reversal is its own inverse
  return member < extras_ ? 2 : 1;
}
Butterfly::Offsets Butterfly::blockOffsets(std::size_t count, bool bitReversed) const {
  Offsets offsets(static_cast<std::size_t>(p_) + 1, 0);
  for (int s = 0; s < p_; ++s)
    offsets[static_cast<std::size_t>(s) + 1] = offsets[static_cast<std::size_t>(s)] +
                                               count * static_cast<std::size_t>(blocksAt(s, bitReversed));
  return offsets;
}

// The reduce-scatter by recursive halving over the positions (work holds them in position order;
// `input` is that order too, and is read at the first step only). Records each step for the
// all-gather that retraces them.
bool Butterfly::halve(const std::byte* input, const Offsets& offsets, DataType type, ReduceOp op,
                      std::vector<Step>& steps) {
  const std::size_t elementBytes = dataTypeSize(type);
  const int me = group_.member;
  std::byte* work = work_.data();
  const std::byte* source = input;
  int lo = 0, hi = p_;
  for (int k = 0; k < q_; ++k) {
    const int partner = me ^ (1 << k), mid = lo + (hi - lo) / 2;
    const bool upper = ((me >> k) & 1) != 0;
    const Step step{partner, lo, hi, upper ? mid : lo, upper ? hi : mid};
    steps.push_back(step);
    const int giveLo = upper ? lo : mid, giveHi = upper ? mid : hi;
    const std::size_t give = offsets[static_cast<std::size_t>(giveLo)],
                      keep = offsets[static_cast<std::size_t>(step.keepLo)];
    const std::size_t giveCount = offsets[static_cast<std::size_t>(giveHi)] - give;
    const std::size_t keepCount = offsets[static_cast<std::size_t>(step.keepHi)] - keep;
    // What is sent comes from this object's memory (the class comment says why).
    if (source != work && !summary_.disagrees())
      copyBytes(work + give * elementBytes, source + give * elementBytes, giveCount * elementBytes);
    const bool mineFirst = me < partner;  // the lower member's partial first, on both sides
    PartFn sink([&](std::size_t begin, std::size_t end, const std::byte* theirs) {
      const std::byte* mine = source + keep * elementBytes + begin;
      reduceElements(work + keep * elementBytes + begin, mineFirst ? mine : theirs, mineFirst ? theirs : mine,
                     (end - begin) / elementBytes, type, op);
    });
    exchange(partner, true, {work + give * elementBytes, giveCount * elementBytes}, true,
             {keepCount * elementBytes, nullptr, &sink});
    source = work;
    lo = step.keepLo;
    hi = step.keepHi;
  }
  return !summary_.disagrees();
}

// Member i < e: member p+i's whole contribution folded into work (op(mine, its)).
void Butterfly::fold(const std::byte* input, std::size_t count, DataType type, ReduceOp op) {
  const std::size_t elementBytes = dataTypeSize(type);
  std::byte* work = work_.data();
  PartFn sink([&](std::size_t begin, std::size_t end, const std::byte* theirs) {
    reduceElements(work + begin, input + begin, theirs, (end - begin) / elementBytes, type, op);
  });
  exchange(group_.member + p_, false, {}, true, {count * elementBytes, nullptr, &sink});
}

// The all-reduce's all-gather: the halving's steps in reverse, each copying the partner's finished
// positions straight into the output.
void Butterfly::gatherBack(std::byte* output, const Offsets& offsets, std::size_t elementBytes,
                           const std::vector<Step>& steps) {
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    const bool keptLower = step->keepLo == step->lo;
    const std::size_t mine = offsets[static_cast<std::size_t>(step->keepLo)];
    const std::size_t mineCount = offsets[static_cast<std::size_t>(step->keepHi)] - mine;
    const std::size_t theirs = offsets[static_cast<std::size_t>(keptLower ? step->keepHi : step->lo)];
    const std::size_t theirsCount = offsets[static_cast<std::size_t>(keptLower ? step->hi : step->keepLo)] - theirs;
    std::byte* target = output + theirs * elementBytes;
    PartFn sink(placeInto(target));
    const Received received = exchange(step->partner, true, {output + mine * elementBytes, mineCount * elementBytes},
                                       true, {theirsCount * elementBytes, target, &sink, Incoming::Summary::kLeave});
    if (received != Received::kThisCall)
      throw BackendError("recursive doubling all-gather: a partner's message did not belong to this checked call");
  }
}

// Member i < e: member p+i's result (or only the verdict, once the summary disagrees).
void Butterfly::tellFolded(const std::byte* payload, std::size_t bytes) {
  if (group_.member < extras_) exchange(group_.member + p_, true, {payload, bytes}, false, {});
}

// Member p+i: its result from member i, with the whole group's summary; false on a disagreement.
bool Butterfly::takeFromFolded(std::byte* output, std::size_t bytes) {
  PartFn sink(placeInto(output));
  return exchange(group_.member - p_, false, {}, true, {bytes, output, &sink, Incoming::Summary::kTake}) ==
         Received::kThisCall;
}

bool Butterfly::allreduce(const void* inputBytes, void* outputBytes, std::size_t count, DataType type, ReduceOp op,
                          int divisor) {
  const std::size_t elementBytes = dataTypeSize(type), bytes = count * elementBytes;
  const auto* input = static_cast<const std::byte*>(inputBytes);
  auto* output = static_cast<std::byte*>(outputBytes);
  std::byte* work = this->work(bytes);
  const int me = group_.member;
  if (me >= p_) {  // folded into member me - p
    copyBytes(work, input, bytes);
    exchange(me - p_, true, {work, bytes}, false, {});
    return takeFromFolded(output, bytes);
  }
  if (me < extras_) {
    fold(input, count, type, op);
    input = work;
  }
  const Offsets offsets = chunkOffsets(count);
  std::vector<Step> steps;
  if (!halve(input, offsets, type, op, steps)) {
    tellFolded(nullptr, 0);
    return false;
  }
  const int own = steps.empty() ? 0 : steps.back().keepLo;
  const std::size_t ownBegin = offsets[static_cast<std::size_t>(own)];
  const std::size_t ownCount = offsets[static_cast<std::size_t>(own) + 1] - ownBegin;
  std::byte* finished = (steps.empty() ? const_cast<std::byte*>(input) : work) + ownBegin * elementBytes;
  if (divisor > 1) {
    copyBytes(work + ownBegin * elementBytes, finished, ownCount * elementBytes);
    finished = work + ownBegin * elementBytes;
    divideElements(finished, ownCount, type, divisor);
  }
  copyBytes(output + ownBegin * elementBytes, finished, ownCount * elementBytes);
  gatherBack(output, offsets, elementBytes, steps);
  tellFolded(output, bytes);
  return true;
}

bool Butterfly::reduceScatter(const void* inputBytes, void* outputBytes, std::size_t count, DataType type, ReduceOp op,
                              int divisor) {
  const std::size_t elementBytes = dataTypeSize(type), blockBytes = count * elementBytes;
  const auto members = static_cast<std::size_t>(group_.members);
  const auto* input = static_cast<const std::byte*>(inputBytes);
  auto* output = static_cast<std::byte*>(outputBytes);
  std::byte* work = this->work(members * blockBytes);
  // Position s holds member reverseBits(s)'s blocks, so that the halving leaves each its own.
  const Offsets offsets = blockOffsets(count, true);
  for (int member = 0; member < p_; ++member) {
    std::byte* position = work + offsets[static_cast<std::size_t>(positionOf(member, true))] * elementBytes;
    copyBytes(position, input + static_cast<std::size_t>(member) * blockBytes, blockBytes);
    if (member < extras_)
      copyBytes(position + blockBytes, input + static_cast<std::size_t>(member + p_) * blockBytes, blockBytes);
  }
  const int me = group_.member;
  if (me >= p_) {
    exchange(me - p_, true, {work, members * blockBytes}, false, {});
    return takeFromFolded(output, blockBytes);
  }
  if (me < extras_) fold(work, members * count, type, op);
  std::vector<Step> steps;
  if (!halve(work, offsets, type, op, steps)) {
    tellFolded(nullptr, 0);
    return false;
  }
  std::byte* mine = work + offsets[static_cast<std::size_t>(positionOf(me, true))] * elementBytes;
  const std::size_t blocks = me < extras_ ? 2 : 1;
  if (divisor > 1) divideElements(mine, blocks * count, type, divisor);
  copyBytes(output, mine, blockBytes);
  tellFolded(mine + blockBytes, blockBytes);
  return true;
}

bool Butterfly::allgather(const void* inputBytes, void* outputBytes, std::size_t count, DataType type) {
  const std::size_t elementBytes = dataTypeSize(type), blockBytes = count * elementBytes;
  const auto members = static_cast<std::size_t>(group_.members);
  const auto* input = static_cast<const std::byte*>(inputBytes);
  auto* output = static_cast<std::byte*>(outputBytes);
  std::byte* work = this->work(members * blockBytes);
  const Offsets offsets = blockOffsets(count, false);  // position i: member i's block, then member p+i's
  const int me = group_.member;
  auto unpack = [&] {
    for (int member = 0; member < p_; ++member) {
      const std::byte* position = work + offsets[static_cast<std::size_t>(member)] * elementBytes;
      copyBytes(output + static_cast<std::size_t>(member) * blockBytes, position, blockBytes);
      if (member < extras_)
        copyBytes(output + static_cast<std::size_t>(member + p_) * blockBytes, position + blockBytes, blockBytes);
    }
  };
  if (me >= p_) {
    copyBytes(work, input, blockBytes);
    exchange(me - p_, true, {work, blockBytes}, false, {});
    PartFn sink(placeInto(work));
    if (exchange(me - p_, false, {}, true, {members * blockBytes, work, &sink, Incoming::Summary::kTake}) !=
        Received::kThisCall)
      return false;
    unpack();
    return true;
  }
  std::byte* position = work + offsets[static_cast<std::size_t>(me)] * elementBytes;
  copyBytes(position, input, blockBytes);
  if (me < extras_) {
    PartFn sink(placeInto(position + blockBytes));
    exchange(me + p_, false, {}, true, {blockBytes, position + blockBytes, &sink});
  }
  // Doubling: at step k this member holds positions [me >> k << k, +2^k), its partner the next (or
  // previous) ones; both then hold the union.
  for (int k = 0; k < q_; ++k) {
    const int partner = me ^ (1 << k), mineLo = (me >> k) << k, theirsLo = (partner >> k) << k, width = 1 << k;
    const std::size_t mine = offsets[static_cast<std::size_t>(mineLo)],
                      theirs = offsets[static_cast<std::size_t>(theirsLo)];
    std::byte* target = work + theirs * elementBytes;
    PartFn sink(placeInto(target));
    exchange(partner, true,
             {work + mine * elementBytes, (offsets[static_cast<std::size_t>(mineLo + width)] - mine) * elementBytes},
             true, {(offsets[static_cast<std::size_t>(theirsLo + width)] - theirs) * elementBytes, target, &sink});
  }
  if (summary_.disagrees()) {
    tellFolded(nullptr, 0);
    return false;
  }
  unpack();
  tellFolded(work, members * blockBytes);
  return true;
}

}  // namespace ringsync::detail
