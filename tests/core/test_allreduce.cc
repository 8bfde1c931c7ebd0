// All-reduce over every DataType x ReduceOp x count x in/out-of-place x algorithm, checked
// against closed-form expectations, against MPI_Allreduce for float32/float64, and for bit-identical
// results on every rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "closed_form.h"
#include "collectives/recursive_doubling.h"
#include "collectives/split_allreduce.h"
#include "ringsync/ringsync.h"
#include "src/algorithm_selection.h"
#include "src/selection_constants.h"
#include "support/test_support.h"

using namespace ringsync;
using ringsync::test::TypedBuffer;

namespace {

constexpr std::size_t kSmallSegmentBytes = 4096;  // many segments per chunk at modest counts

struct Outcome {
  std::size_t wrong = 0;
  std::size_t firstWrong = 0;
  double got = 0, want = 0;
};

Outcome runOne(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  const int n = comm.size();
  // Inputs and expectations repeat (closed_form.h): tabulate one period instead of recomputing per element.
  const std::size_t period = closed_form::allreducePeriod(n);
  std::vector<double> input(period), expected(period);
  for (std::size_t i = 0; i < period; ++i) {
    input[i] = closed_form::allreduceInput(op, type, comm.rank(), n, i);
    expected[i] = closed_form::allreduceExpected(op, type, n, i);
  }
  TypedBuffer send(type, count);
  for (std::size_t i = 0; i < count; ++i) send.set(i, input[i % period]);
  TypedBuffer recv(type, count);
  recv.fill(0xA5);
  if (inPlace) {
    comm.allreduce(send.data(), send.data(), count, type, op);
  } else {
    comm.allreduce(send.data(), recv.data(), count, type, op);
  }
  const TypedBuffer& result = inPlace ? send : recv;
  Outcome outcome;
  for (std::size_t i = 0; i < count; ++i) {
    const double want = expected[i % period];
    if (result.get(i) != want) {
      if (outcome.wrong++ == 0) outcome = {1, i, result.get(i), want};
    }
  }
  if (!test::identicalOnAllRanks(result.data(), result.bytes())) outcome.wrong += 1;
  return outcome;
}

void sweep(const Options& options, const std::vector<std::size_t>& extraCounts, bool smallOnly) {
  Communicator comm(MPI_COMM_WORLD, options);
  for (DataType type : kAllDataTypes) {
    std::vector<std::size_t> counts = test::interestingCounts(comm.size(), type, options.ringSegmentBytes);
    counts.insert(counts.end(), extraCounts.begin(), extraCounts.end());
    for (ReduceOp op : kAllReduceOps) {
      for (std::size_t count : counts) {
        if (smallOnly && count * dataTypeSize(type) > options.smallBytes) continue;
        for (bool inPlace : {false, true}) {
          const Outcome outcome = runOne(comm, type, op, count, inPlace);
          const bool ok = test::allRanks(outcome.wrong == 0);
          INFO(test::describe(type, op, count, inPlace)
               << " algo=" << algorithmName(options.algorithm) << ": rank " << comm.rank() << " has " << outcome.wrong
               << " wrong, first at " << outcome.firstWrong << " got " << outcome.got << " want " << outcome.want);
          REQUIRE(ok);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("allreduce: automatic algorithm, every type, op and count", "[allreduce]") {
  Options options;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;  // the same cut when the ranks span hosts (tests/netns)
  sweep(options, {}, false);
}

TEST_CASE("allreduce: ring forced, small and large counts", "[allreduce][ring]") {
  Options options;
  options.algorithm = Algorithm::kRing;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;  // the same cut when the ranks span hosts (tests/netns)
  options.ringDepth = 2;                                     // the minimum pipeline depth must work too
  options.ringDepthAcrossNodes = 2;
  sweep(options, {}, false);
}

TEST_CASE("allreduce: direct exchange forced, every count it can carry", "[allreduce][direct]") {
  Options options;
  options.algorithm = Algorithm::kDirect;
  options.smallBytes = detail::kMaxSmallBytes;
  sweep(options, {4093}, true);
}

TEST_CASE("allreduce: recursive doubling forced, every type, op and count", "[allreduce][recursive_doubling]") {
  // On one node it runs across all ranks (np=3: one rank folded in and served at the end); past
  // detail::kRecursiveDoublingMaxBytes the automatic choice serves.
  Options options;
  options.algorithm = Algorithm::kRecursiveDoubling;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;  // the same cut when the ranks span hosts (tests/netns)
  sweep(options, {4093, 100003}, false);
  Communicator comm(MPI_COMM_WORLD, options);
  const Outcome outcome = runOne(comm, DataType::kFloat32, ReduceOp::kAvg, 100003, true);
  REQUIRE(test::allRanks(outcome.wrong == 0));
  REQUIRE((comm.size() == 1 || comm.lastPlacement().algorithm == "recursive_doubling"));
}

TEST_CASE("allreduce: Rabenseifner forced, every type, op and count", "[allreduce][rabenseifner]") {
  // On one node it runs across all ranks (np=3: rank 2 folded into rank 0 and served at the end);
  // counts below the ranks leave some chunks empty, 4093 and 100003 split unevenly and take many
  // parts per message.
  Options options;
  options.algorithm = Algorithm::kRabenseifner;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  sweep(options, {4093, 100003}, false);
  Communicator comm(MPI_COMM_WORLD, options);
  for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kSum}) {
    const Outcome outcome = runOne(comm, DataType::kFloat32, op, 100003, true);
    REQUIRE(test::allRanks(outcome.wrong == 0));
    REQUIRE((comm.size() == 1 || comm.lastPlacement().algorithm == "rabenseifner"));
  }
}

TEST_CASE("allreduce: Rabenseifner forced in pieces, every type, op and count", "[allreduce][rabenseifner]") {
  // A network latency of 8 bytes cuts the flat butterfly's pieces to 100 x 2 log2 n x 8 bytes
  // (rabenseifner_allreduce.cc): 1,600 B at np=2-3, 3,200 B at np=4, so the larger counts take
  // several pieces, the last one shorter.
  Options options;
  options.algorithm = Algorithm::kRabenseifner;
  options.networkLatencyBytes = 8;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  sweep(options, {4093}, false);
  Communicator comm(MPI_COMM_WORLD, options);
  const Outcome outcome = runOne(comm, DataType::kFloat32, ReduceOp::kAvg, 100003, true);
  REQUIRE(test::allRanks(outcome.wrong == 0));
  REQUIRE((comm.size() == 1 || comm.lastPlacement().algorithm == "rabenseifner"));
}

TEST_CASE("selection: Rabenseifner and its halves among 4 or more butterfly members, from S1, below S2",
          "[allreduce][rabenseifner][unit]") {
  using namespace ringsync::detail;
  Options options;
  // N nodes of L ranks (a hierarchy when L >= 2) or, with `blocker`, N single-rank nodes / uneven ones.
  auto choose = [&](CollectiveKind kind, std::size_t bytes, int nodes, int ranksPerNode,
                    HierarchyBlocker blocker = HierarchyBlocker::kNone) {
    const int size = nodes * ranksPerNode;
    const bool hierarchy = blocker == HierarchyBlocker::kNone;
    const SelectionInputs in{kind,
                             bytes / 4,
                             4,
                             size,
                             false,
                             32768,
                             options,
                             blocker,
                             hierarchy ? std::size_t{4} << 20 : 0,
                             hierarchy ? nodes : size};
    return std::string(detail::algorithmName(chooseAlgorithm(in).algorithm));
  };
  const CollectiveKind allreduce = CollectiveKind::kAllreduce;
  const HierarchyBlocker single = HierarchyBlocker::kOneRankPerNode;
  // 8 single-rank nodes: S1 = 3 (lambda + h) / (1 + 2/8) = 4.5 KiB; a power of two: no S2.
  REQUIRE(choose(allreduce, 4096, 8, 1, single) == "recursive_doubling");
  REQUIRE(choose(allreduce, 5120, 8, 1, single) == "rabenseifner");
  REQUIRE(choose(allreduce, std::size_t{64} << 20, 8, 1, single) == "rabenseifner");
  // 7: S1 = 11 KiB lies above S2 = 5.7 KiB (its pre/post step costs what it saves): the ring.
  REQUIRE(choose(allreduce, 8192, 7, 1, single) == "recursive_doubling");
  REQUIRE(choose(allreduce, 16384, 7, 1, single) == "ring");
  REQUIRE(choose(allreduce, 16384, 7, 1, HierarchyBlocker::kUnevenNodes) == "ring");
  // 24 single-rank nodes: Rabenseifner from S1 = 4.3 KiB to S2 = 32 KiB, then the ring.
  REQUIRE(choose(allreduce, 16384, 24, 1, single) == "rabenseifner");
  REQUIRE(choose(allreduce, 65536, 24, 1, single) == "ring");
  // 4 nodes of 2: S1 = 2 (lambda + 2h) / (2/4) = 8.2 KiB, then Rabenseifner at every size.
  REQUIRE(choose(allreduce, 4096, 4, 2) == "recursive_doubling");
  REQUIRE(choose(allreduce, 16384, 4, 2) == "rabenseifner");
  REQUIRE(choose(allreduce, std::size_t{64} << 20, 4, 2) == "rabenseifner");
  // 24 nodes of 2 past S2: the hierarchical all-reduce keeps up ((N - q - 2) lambda < its piece).
  REQUIRE(choose(allreduce, std::size_t{1} << 20, 24, 2) == "hierarchical");
  // Three members or fewer: the measured rules (recursive doubling up to its limits, then the ring).
  REQUIRE(choose(allreduce, detail::kAcrossManyNodesDoublingBytes, 3, 1, single) == "recursive_doubling");
  REQUIRE(choose(allreduce, detail::kAcrossManyNodesDoublingBytes + 4, 3, 1, single) == "ring");
  // The halves: past a round, across 8 single-rank nodes; hierarchical on nodes of 2; the ring on 7.
  const std::size_t block = 20011 * 4;
  REQUIRE(choose(CollectiveKind::kReduceScatter, block, 8, 1, single) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, block, 8, 1, single) == "recursive_doubling");
  REQUIRE(choose(CollectiveKind::kReduceScatter, block, 4, 2) == "hierarchical");
  REQUIRE(choose(CollectiveKind::kAllgather, block, 7, 1, single) == "ring");
  REQUIRE(choose(CollectiveKind::kAllgather, 1024, 8, 1, single) == "direct");
  // Small arrays across nodes of 2: the halves through the nodes' leaders up to 64 KiB of array.
  REQUIRE(choose(CollectiveKind::kReduceScatter, 4, 4, 2) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, 4, 4, 2) == "recursive_doubling");
  REQUIRE(choose(CollectiveKind::kReduceScatter, 128, 4, 2) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, 128, 4, 2) == "recursive_doubling");
  REQUIRE(choose(CollectiveKind::kAllgather, 132, 4, 2) == "recursive_doubling");
  REQUIRE(choose(CollectiveKind::kReduceScatter, 1024, 4, 2) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, 2048, 4, 2) == "recursive_doubling");
  REQUIRE(choose(CollectiveKind::kReduceScatter, 8192, 4, 2) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, 8192, 4, 2) == "recursive_doubling");
  // Above it the hierarchical versions, though the blocks still fit a round.
  REQUIRE(choose(CollectiveKind::kAllgather, 8196, 4, 2) == "hierarchical");
  REQUIRE(choose(CollectiveKind::kReduceScatter, 8196, 4, 2) == "hierarchical");
  // Forced: Rabenseifner and its halves wherever there are two ranks.
  options.algorithm = Algorithm::kRabenseifner;
  REQUIRE(choose(allreduce, 8, 7, 1, single) == "rabenseifner");
  REQUIRE(choose(allreduce, 8, 2, 1, HierarchyBlocker::kOneNode) == "rabenseifner");
  REQUIRE(choose(allreduce, 8, 1, 1, HierarchyBlocker::kOneNode) != "rabenseifner");
  REQUIRE(choose(CollectiveKind::kReduceScatter, 8, 2, 2) == "recursive_halving");
  REQUIRE(choose(CollectiveKind::kAllgather, 8, 3, 1, single) == "recursive_doubling");
}

TEST_CASE("allreduce: handed to MPI (RINGSYNC_ALGO=mpi), every type, op and count", "[allreduce][mpi]") {
  // float16/bfloat16 go through an MPI_Op of ringsync's kernels, kAvg is the sum then a division:
  // the same closed forms as every other algorithm, bit-identical on every rank.
  Options options;
  options.algorithm = Algorithm::kMpi;
  sweep(options, {4093, 100003}, false);
  Communicator comm(MPI_COMM_WORLD, options);
  for (DataType type : {DataType::kFloat16, DataType::kFloat32, DataType::kInt64}) {
    const Outcome outcome = runOne(comm, type, ReduceOp::kAvg, 100003, true);
    REQUIRE(test::allRanks(outcome.wrong == 0));
    REQUIRE(comm.lastPlacement().algorithm == "mpi");
  }
}

TEST_CASE("allreduce: recursive doubling, messages at the edges of its parts", "[allreduce][recursive_doubling]") {
  // A message of [prefix | payload] longer than kPartBytes goes in parts, the last one shorter,
  // empty when the length is a whole number of parts: the lengths around 1 and 2 parts, per type.
  using detail::RecursiveDoubling;
  Options options;
  options.algorithm = Algorithm::kRecursiveDoubling;
  Communicator comm(MPI_COMM_WORLD, options);
  for (DataType type : kAllDataTypes) {
    const std::size_t size = dataTypeSize(type);
    for (std::size_t parts : {1, 2}) {
      const std::size_t whole = (parts * RecursiveDoubling::kPartBytes - RecursiveDoubling::kPrefixBytes) / size;
      for (std::size_t count : {whole - 1, whole, whole + 1}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          const Outcome outcome = runOne(comm, type, op, count, false);
          INFO(test::describe(type, op, count, false)
               << ": rank " << comm.rank() << " has " << outcome.wrong << " wrong, first at " << outcome.firstWrong);
          REQUIRE(test::allRanks(outcome.wrong == 0));
          REQUIRE((comm.size() == 1 || comm.lastPlacement().algorithm == "recursive_doubling"));
        }
      }
    }
  }
}

TEST_CASE("allreduce: default options (256 KiB segments) at a count spanning several segments", "[allreduce]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = (std::size_t{3} << 20) + 5;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    const Outcome outcome = runOne(comm, DataType::kFloat32, op, count, true);
    REQUIRE(test::allRanks(outcome.wrong == 0));
  }
}

TEST_CASE("allreduce: split forced, every type, op and count", "[allreduce][split]") {
  Options options;
  options.algorithm = Algorithm::kSplit;  // on one node (across nodes: the ring)
  sweep(options, {4093, 100003}, false);
}

TEST_CASE("allreduce: default options at split's largest message and one element past it (in pieces)",
          "[allreduce][split]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  // Split carries a message while every rank's first round (all chunks but its own) fits a slot.
  const std::size_t slotBytes = n > 1 ? std::min(detail::kMaxSmallBytes,
                                                 detail::kDirectRoundBytes / static_cast<std::size_t>(n - 1))
                                      : detail::kMaxSmallBytes;
  std::size_t largest = slotBytes / 4;  // one rank: no split, any count is a plain copy
  if (n > 1)
    while (detail::SplitChunks(largest + 1, n).largestGather() * 4 <= slotBytes) ++largest;
  REQUIRE(detail::splitPieceElements(slotBytes, n, 4) == (n > 1 ? largest : slotBytes / 4));
  // One piece, one element more (a second piece of one element), and two and a half pieces.
  for (std::size_t count : {largest, largest + 1, largest * 5 / 2 + 3}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      for (bool inPlace : {false, true}) {
        const Outcome outcome = runOne(comm, DataType::kFloat32, op, count, inPlace);
        INFO(test::describe(DataType::kFloat32, op, count, inPlace)
             << ": rank " << comm.rank() << " has " << outcome.wrong << " wrong, first at " << outcome.firstWrong);
        REQUIRE(test::allRanks(outcome.wrong == 0));
        REQUIRE((n == 1 || comm.lastPlacement().algorithm == "split"));
      }
    }
  }
}

TEST_CASE("allreduce: split in pieces, every type at two and a half pieces", "[allreduce][split]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::size_t slotBytes = n > 1 ? detail::kDirectRoundBytes / static_cast<std::size_t>(n - 1) : 0;
  for (DataType type : kAllDataTypes) {
    const std::size_t piece = n > 1 ? detail::splitPieceElements(slotBytes, n, dataTypeSize(type)) : 1000;
    const std::size_t count = piece * 5 / 2 + 7;
    for (ReduceOp op : kAllReduceOps) {
      const Outcome outcome = runOne(comm, type, op, count, op == ReduceOp::kSum);
      INFO(test::describe(type, op, count, op == ReduceOp::kSum)
           << ": rank " << comm.rank() << " has " << outcome.wrong << " wrong, first at " << outcome.firstWrong);
      REQUIRE(test::allRanks(outcome.wrong == 0));
      REQUIRE((n == 1 || comm.lastPlacement().algorithm == "split"));
    }
  }
}

TEST_CASE("split chunks: contiguous, cover the count, and locate each chunk in a peer's first round",
          "[allreduce][split][unit]") {
  for (int n : {1, 2, 3, 4, 7}) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1021}}) {
      const detail::SplitChunks chunks(count, n);
      REQUIRE(chunks.begin(0) == 0);
      REQUIRE(chunks.begin(n) == count);
      std::size_t largestGather = 0;
      for (int r = 0; r < n; ++r) {
        REQUIRE(chunks.length(r) <= count / static_cast<std::size_t>(n) + 1);
        largestGather = std::max(largestGather, count - chunks.length(r));
        // Rank r's first round holds chunks 0..r-1 then r+1..n-1, back to back.
        std::size_t offset = 0;
        for (int c = 0; c < n; ++c) {
          if (c == r) continue;
          REQUIRE(chunks.offsetIn(r, c) == offset);
          offset += chunks.length(c);
        }
      }
      REQUIRE(chunks.largestGather() == largestGather);
    }
  }
}

TEST_CASE("allreduce: agrees with MPI_Allreduce for float32 and float64", "[allreduce][mpi-reference]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = 100003;
  const struct {
    ReduceOp op;
    MPI_Op mpiOp;
  } pairs[] = {{ReduceOp::kSum, MPI_SUM},
               {ReduceOp::kProd, MPI_PROD},
               {ReduceOp::kMin, MPI_MIN},
               {ReduceOp::kMax, MPI_MAX}};
  for (const auto& pair : pairs) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat64}) {
      TypedBuffer input(type, count), ours(type, count), theirs(type, count);
      for (std::size_t i = 0; i < count; ++i)
        input.set(i, closed_form::allreduceInput(pair.op, type, comm.rank(), comm.size(), i));
      comm.allreduce(input.data(), ours.data(), count, type, pair.op);
      MPI_Allreduce(input.data(), theirs.data(), static_cast<int>(count),
                    type == DataType::kFloat32 ? MPI_FLOAT : MPI_DOUBLE, pair.mpiOp, MPI_COMM_WORLD);
      INFO(dataTypeName(type) << " " << reduceOpName(pair.op));
      REQUIRE(test::allRanks(ours.raw() == theirs.raw()));
    }
  }
}

TEST_CASE("allreduce: a communicator over a subset of ranks", "[allreduce][split]") {
  // Ranks split into evens and odds; each half reduces on its own communicator.
  MPI_Comm half = MPI_COMM_NULL;
  const int world = test::worldRank();
  MPI_Comm_split(MPI_COMM_WORLD, world % 2, world, &half);
  {
    Communicator comm(half);
    std::vector<std::int64_t> values(1000, world);
    comm.allreduce(values.data(), values.data(), values.size(), DataType::kInt64, ReduceOp::kSum);
    std::int64_t expected = 0;
    for (int r = world % 2; r < test::worldSize(); r += 2) expected += r;
    bool ok = true;
    for (std::int64_t v : values) ok = ok && v == expected;
    REQUIRE(test::allRanks(ok));
  }
  MPI_Comm_free(&half);
}
