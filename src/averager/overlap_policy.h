// Whether a GradientAverager overlaps its buckets with backward when its options leave that to it
// (GradientAveragerOptions::overlap unset).
//
// Overlap runs host buckets on the progress thread. On one node the all-reduce of a host bucket
// is work for a CPU (copies and reductions in shared memory), not waiting: a rank that has no CPU
// besides the one its backward computes on can only run the thread by taking time from backward
// (bench/RESULTS.md 16.15: 2 ranks bound one to each of 2 cores, libtorch DDP steps 1-9% and
// ringsync-train 2-4% slower, medians, with overlap than all-reducing after backward). So overlap
// is chosen where it can gain:
//  - any bucket in device memory (backward runs on the device; the thread only launches and waits),
//  - ranks on more than one node (the waits for the network yield the CPU to backward),
//  - or this rank has two CPUs or more to itself: min(CPUs in its affinity mask, the node's
//    online CPUs / ranks on the node) >= 2 (mpirun's --bind-to core gives one each).
#pragma once

#include "ringsync/communicator.h"

namespace ringsync::detail {

// The CPUs a rank can count on: min(CPUs in its affinity mask, online CPUs / ranks on the node).
double cpusPerRank(int cpusInMask, int onlineCpus, int ranksOnNode);
double cpusOfThisRank(int ranksOnNode);  // cpusPerRank of this process's mask and this node

bool overlapGains(const Communicator& comm, bool anyBucketOnDevice);

}  // namespace ringsync::detail
