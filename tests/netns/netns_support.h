// What the tests across simulated hosts share: where this rank is (which host, which rank on it),
// a communicator numbered across the hosts alternately, options forcing an algorithm, and one
// all-reduce, reduce-scatter and all-gather checked against their closed forms on every rank.
#pragma once

#include <cstddef>
#include <string>

#include <mpi.h>

#include "ringsync/ringsync.h"

namespace ringsync::netns_test {

// 0 on rank 0's host, 1 on the other (a node index that does not assume any rank numbering).
int hostIndex();

// This rank's place among the ranks of its host.
int localRankOnHost();

// MPI_COMM_WORLD renumbered host 0's first rank, host 1's first, host 0's second, host 1's
// second: ranks that are not numbered node by node. The caller frees it.
MPI_Comm interleavedAcrossHosts();
// Local rank by local rank too, but the odd local ranks take the hosts in reverse order: the
// ranks with local rank 1 meet the nodes in another order than the leaders (local rank 0) do.
MPI_Comm crossedAcrossHosts();

// The environment's options with `algorithm` forced.
Options forced(Algorithm algorithm);

// The MismatchError text `what` that a rank caught says the calls disagree, names rank `odd`'s
// call and the others' count (true on every rank of MPI_COMM_WORLD or false on every one).
bool mismatchNamesBoth(const std::string& what, int odd, std::size_t usualCount);

// Fills, all-reduces and checks one call: true on every rank of `comm`'s group when every element
// is the closed form's value and every rank holds the same bits.
bool exactAllreduce(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace,
                    MPI_Comm group = MPI_COMM_WORLD);

// The same for a reduce-scatter (blocks of `count`; in place: recv is the rank's block of send)
// and an all-gather (in place: send is the rank's block of recv), true on every rank of MPI_COMM_WORLD.
bool exactReduceScatter(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace);
bool exactAllgather(Communicator& comm, DataType type, std::size_t count, bool inPlace);

}  // namespace ringsync::netns_test
