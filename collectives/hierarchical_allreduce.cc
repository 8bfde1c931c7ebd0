#include "hierarchical_allreduce.h"

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "node_hierarchy.h"
#include "reduce_kernels.h"
#include "ring_allreduce.h"
#include "ringsync/errors.h"
#include "split_allreduce.h"

namespace ringsync::detail {
namespace {

// Pieces this large keep the network busy while the node's shared-memory phases of the pieces
// before and after run (measured: bench/multihost.sh, 2 hosts x 2 ranks, 2 Gbit/s).
constexpr std::size_t kPipelinePieceBytes = 2u << 20;

// CallHeader::root of an all-reduce is -1; this value in a cross-node fingerprint says "my node's
// ranks disagree about the call", so the other nodes raise too instead of waiting in the ring.
constexpr std::int32_t kNodeDisagrees = -2;

// The caller's check over the node's or the cross-node round, whose ranks are numbered within
// that communicator: errors say which ranks of the whole communicator those are. Inactive (no
// round, no check) for every piece after the first.
class SubgroupCheck final : public CallCheck {
 public:
  SubgroupCheck(const CallCheck& inner, const std::vector<int>& globalRanks, const char* what, bool active)
      : inner_(inner), globalRanks_(globalRanks), what_(what), active_(active) {}

  void afterFirstRound(const RoundTransport& round) const override {
    if (!active_) return;
    for (int r = 0; r < round.size(); ++r)
      if (round.header(r).root == kNodeDisagrees)
        throw MismatchError("ranks disagree about a collective: the ranks on the node of rank " +
                            std::to_string(globalRanks_[static_cast<std::size_t>(r)]) +
                            " made different calls (its error names them)" + relabel());
    try {
      inner_.afterFirstRound(round);
    } catch (const MismatchError& error) {
      throw MismatchError(error.what() + relabel());
    } catch (const NonFiniteError& error) {
      throw NonFiniteError(error.what() + relabel());
    }
  }
  bool wantsRound() const override { return active_ && inner_.wantsRound(); }

 private:
  std::string relabel() const {
    std::string ranks;
    for (int g : globalRanks_) ranks += (ranks.empty() ? "" : ", ") + std::to_string(g);
    return std::string(" [hierarchical all-reduce, ") + what_ + ": its ranks 0.." +
           std::to_string(globalRanks_.size() - 1) + " are ranks " + ranks + " of the communicator]";
  }

  const CallCheck& inner_;
  const std::vector<int>& globalRanks_;
  const char* what_;
  bool active_;
};

// The most elements a piece may have: split's first round carries all but the own chunk, so
// L/(L-1) rounds' worth, less the few elements the uneven chunks may add (at least 1).
std::size_t pieceElements(const NodeHierarchy& h, std::size_t elementBytes) {
  const std::size_t capacity = h.nodeRounds->maxPayloadBytes() / elementBytes;
  const std::size_t ranks = static_cast<std::size_t>(h.localSize);
  std::size_t piece = capacity * ranks / (ranks - 1);
  while (piece > 1 && SplitChunks(piece, h.localSize).largestGather() > capacity) --piece;
  return std::max<std::size_t>(1, piece);
}

// Names the peers of one phase's waits as ranks of the whole communicator, until the call ends.
class PeerNames {
 public:
  explicit PeerNames(Deadline& deadline) : deadline_(deadline) {}
  ~PeerNames() { deadline_.namePeersAs(nullptr); }
  PeerNames(const PeerNames&) = delete;
  PeerNames& operator=(const PeerNames&) = delete;
  void use(const std::vector<int>& globalRanks) { deadline_.namePeersAs(&globalRanks); }

 private:
  Deadline& deadline_;
};

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

// The node's verdict on its first round, kept rather than raised at once: the other nodes must
// hear of it first (see tellOtherNodes). `crossHeader` gets what they need to raise the same way.
std::exception_ptr checkNode(AlgorithmContext& node, CallHeader* crossHeader) {
  try {
    firstRoundDone(node);
  } catch (const MismatchError&) {
    crossHeader->root = kNodeDisagrees;
    return std::current_exception();
  } catch (const NonFiniteError&) {
    crossHeader->flags |= kFlagNonFiniteInput;
    return std::current_exception();
  }
  return nullptr;
}

// This node will not run the ring: exchange fingerprints with the other nodes' rings anyway (they
// see the poisoned header and withdraw their early segment; firstRoundDone takes it off the wire
// here), then raise the node's own error.
[[noreturn]] void tellOtherNodes(AlgorithmContext& cross, const std::exception_ptr& nodeVerdict) {
  try {
    fingerprintRound(cross);
  } catch (const MismatchError&) {
  } catch (const NonFiniteError&) {
  }
  std::rethrow_exception(nodeVerdict);
}

}  // namespace

void hierarchicalAllreduce(AlgorithmContext& context, const AllreduceArgs& args) {
  if (context.hierarchy == nullptr || args.scattered != nullptr)
    throw InvalidArgument("allreduce: the hierarchical algorithm needs ranks on several nodes with the same number "
                          "of ranks on each, and one contiguous buffer");
  NodeHierarchy& h = *context.hierarchy;
  // First a fingerprint round on the whole communicator, where every algorithm starts: a rank
  // whose count put it on another algorithm (a direct round below the across-node limit) meets
  // this call there and both raise MismatchError, instead of waiting on different communicators
  // until the timeout. One header round across the nodes, ~1% of a 1 MiB call over 2 Gbit/s.
  fingerprintRound(context);
  // kAvg: sums at both levels, one division by every rank at the end (bit-identical everywhere).
  const ReduceOp op = args.op == ReduceOp::kAvg ? ReduceOp::kSum : args.op;
  const std::size_t elementBytes = dataTypeSize(args.type);
  const std::size_t pieceLimit = std::min(pieceElements(h, elementBytes),
                                          std::max<std::size_t>(1, kPipelinePieceBytes / elementBytes));
  const std::size_t pieces = args.count == 0 ? 1 : (args.count + pieceLimit - 1) / pieceLimit;
  auto pieceArgs = [&](std::size_t p) {
    const std::size_t begin = p * pieceLimit, length = std::min(pieceLimit, args.count - begin);
    return AllreduceArgs{at(args.send, begin, elementBytes), at(args.recv, begin, elementBytes), length, args.type, op};
  };
  auto ownArgs = [&](const AllreduceArgs& piece) {
    const SplitChunks chunks(piece.count, h.localSize);
    std::byte* own = at(piece.recv, chunks.begin(h.localRank), elementBytes);
    return AllreduceArgs{own, own, chunks.length(h.localRank), args.type, op};
  };

  PeerNames names(context.deadline);
  const SubgroupCheck nodeCheck(context.check, h.nodeGlobalRanks, "node", true);
  const SubgroupCheck crossCheck(context.check, h.crossGlobalRanks, "across nodes", true);
  const SubgroupCheck noCheck(context.check, h.crossGlobalRanks, "", false);
  AlgorithmContext node{h.nodeComm,   h.localRank,    h.localSize,      *h.nodeRounds, h.nodeScratch,
                        context.ring, context.header, context.deadline, nodeCheck};
  auto reduceScatterInNode = [&](const AllreduceArgs& piece) {
    names.use(h.nodeGlobalRanks);
    splitScatterRound(node, piece);
    splitReduceOwnChunk(node, piece);
  };
  auto allGatherInNode = [&](const AllreduceArgs& piece) {
    names.use(h.nodeGlobalRanks);
    splitGatherRound(node, piece);
  };

  // Piece 0's node round is the one that is checked: a node that disagrees tells the other nodes
  // through the cross-node fingerprints before it raises.
  CallHeader crossHeader = context.header;
  AllreduceArgs current = pieceArgs(0);
  names.use(h.nodeGlobalRanks);
  splitScatterRound(node, current);
  const std::exception_ptr nodeVerdict = checkNode(node, &crossHeader);
  AlgorithmContext firstCross{h.crossComm,   h.nodeIndex,  h.nodes,          *h.crossRounds, h.crossScratch,
                              context.ring,  crossHeader,  context.deadline, crossCheck};
  names.use(h.crossGlobalRanks);
  if (nodeVerdict) tellOtherNodes(firstCross, nodeVerdict);
  splitReduceOwnChunk(node, current);

  // Piece p's cross-node ring runs while the node all-gathers piece p-1 and reduce-scatters piece
  // p+1 through shared memory: the network stays busy during the node phases. Only piece 0's ring
  // exchanges fingerprints.
  AlgorithmContext laterCross{h.crossComm,  h.nodeIndex,     h.nodes,          *h.crossRounds, h.crossScratch,
                              context.ring, context.header,  context.deadline, noCheck};
  AllreduceArgs previous{};
  for (std::size_t p = 0; p < pieces; ++p) {
    const AllreduceArgs own = ownArgs(current);
    names.use(h.crossGlobalRanks);
    RingInProgress ring(p == 0 ? firstCross : laterCross, own);
    ring.advance();
    if (p > 0) allGatherInNode(previous);
    ring.advance();
    AllreduceArgs next{};
    if (p + 1 < pieces) {
      next = pieceArgs(p + 1);
      reduceScatterInNode(next);
    }
    names.use(h.crossGlobalRanks);
    ring.finish();
    if (args.op == ReduceOp::kAvg) divideElements(own.recv, own.count, args.type, context.size);
    previous = current;
    current = next;
  }
  allGatherInNode(previous);
}

}  // namespace ringsync::detail
