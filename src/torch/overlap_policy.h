// Whether DistributedDataParallel overlaps its buckets' all-reduces with backward when its
// options leave that to it (DistributedDataParallelOptions::overlap unset).
//
// Overlap runs host buckets on GradientAverager's progress thread. On one node the all-reduce of
// a host bucket is work for a CPU (copies and reductions in shared memory), not waiting: a rank
// that has no CPU besides the one its backward computes on can only run the thread by taking time
// from backward (bench/RESULTS.md 16.15: 2 ranks bound one to each of 2 cores, steps 4-10% slower
// with overlap than all-reducing after backward). So overlap is chosen where it can gain:
//  - any bucket on a GPU (backward runs on the device; the thread only launches and waits),
//  - ranks on more than one node (the waits for the network yield the CPU to backward),
//  - or this rank has two CPUs or more to itself: min(CPUs in its affinity mask, the node's
//    online CPUs / ranks on the node) >= 2 (mpirun's --bind-to core gives one each).
#pragma once

#include "ringsync/communicator.h"

namespace ringsync::torch::detail {

// The CPUs this rank can count on: min(CPUs in its affinity mask, online CPUs / ranks on the node).
double cpusOfThisRank(int ranksOnNode);

bool overlapByDefault(const Communicator& comm, bool anyBucketOnDevice);

}  // namespace ringsync::torch::detail
