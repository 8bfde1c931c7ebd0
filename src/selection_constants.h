// The sizes at which the algorithm selection (algorithm_selection.cc) switches from one host
// algorithm to another, and the limits of the shared-memory rounds. Internal: measured on this
// project's machines, not part of the contract (include/ringsync/options.h states what a user may
// set). Each says why in one line and where it was measured; the full measurements that were kept
// next to them before are in bench/RESULTS.md section 17.
#pragma once

#include <cstddef>

namespace ringsync::detail {

// The largest direct round, and so the cap of RINGSYNC_SMALL_BYTES (Options::validate): a
// shared-memory slot never needs more (RESULTS section 1, "Against the targets of issue 3").
inline constexpr std::size_t kMaxSmallBytes = 4 * 1024 * 1024;

// The direct round over MPI point-to-point (ranks on several nodes): the ring wins above it
// (np=4; RESULTS section 1).
inline constexpr std::size_t kPointToPointSmallBytes = 32 * 1024;

// What one shared-memory round may carry per rank in total (a slot holds kDirectRoundBytes/(n-1)):
// split beats the ring up to 8 MiB at np=2 (RESULTS section 1, "Split").
inline constexpr std::size_t kDirectRoundBytes = 4 * 1024 * 1024;

// On one node, all-reduces above this take split rather than the direct round: split is ahead
// from ~4 KiB at np=2, ~16-64 KiB at np=4 on 2 cores (RESULTS section 1, "Split").
inline constexpr std::size_t kSplitFromBytes = 32 * 1024;

// On one node, past what one round carries, the round-based algorithms go in pieces of a round
// (split's all-reduce, the direct reduce-scatter and all-gather in slices) rather than the ring:
// against it, medians 1.6-1.8x at np=4 (all-reduce, 4-64 MiB) and 1.2-1.3x at np=2 (16-64 MiB),
// the halves 1.3-1.9x at np=4 and 0.9-1.1x at np=2 (RESULTS section 16.21). A guard, not a
// measured crossover: rounds that carry less than this per rank (none with <= 16 ranks, whose
// rounds carry >= 4 MiB / 15; a short /dev/shm could) would make pieces too short; the ring then.
inline constexpr std::size_t kRoundPiecesFromBytes = 64 * 1024;

// Across two nodes of several ranks each: recursive doubling up to this, the hierarchical
// all-reduce above, whose pipelining keeps the link busy (RESULTS section 13, "Recursive doubling
// across nodes" and "Recursive doubling in eager-sized parts").
inline constexpr std::size_t kAcrossNodesDoublingBytes = 512 * 1024;

// The same limit with more than two members in the doubling: it sends log2(N)/(2(N-1)/N) times
// the ring's bytes (RESULTS section 13, "Recursive doubling among more than two nodes").
inline constexpr std::size_t kAcrossManyNodesDoublingBytes = 64 * 1024;

// Between two single-rank nodes, against the flat ring: tied at a rate cap, the ring ahead from
// 160-200 KiB uncapped (RESULTS section 13, "Simulated hosts with cores of their own").
inline constexpr std::size_t kAcrossTwoRanksDoublingBytes = 160 * 1024;

// Across nodes with the same number (>= 2) of ranks each, broadcasts above this take the
// hierarchical broadcast; below it its fingerprint round and phases cost more than they save
// (RESULTS section 13, "The hierarchical broadcast").
inline constexpr std::size_t kHierarchicalBroadcastFromBytes = 512 * 1024;

// Reduce-scatter and all-gather across nodes of L >= 2 ranks, by the whole array's bytes: up to
// kHalvesThroughNodesUpToBytes the halves through the nodes' leaders (no fingerprint round across,
// one rank per node on the network: 18-34 us at 32 B-16 KiB where the whole array's all-reduce took
// 26-34 us up to 1 KiB and one butterfly per local rank 30-39 us; RESULTS section 16.19), then the
// hierarchical versions' pipelined pieces (level with the halves at 32-64 KiB, both at the link).
// 2 hosts x 2 ranks, 2 Gbit/s (RESULTS sections 16.16, 16.19).
inline constexpr std::size_t kHalvesThroughNodesUpToBytes = 64 * 1024;

// The most forced recursive doubling takes: each step sends the whole part (a bound on its
// scratch, not a measured crossover).
inline constexpr std::size_t kRecursiveDoublingMaxBytes = 4 * 1024 * 1024;

}  // namespace ringsync::detail
