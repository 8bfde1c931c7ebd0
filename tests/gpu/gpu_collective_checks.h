// One device-buffer all-reduce, reduce-scatter, all-gather or broadcast through the public Communicator, checked
// against the closed forms of test_support.h and for bit-identical results on every rank. Shared by the NCCL and staged
// tests (label `gpu`).
#pragma once

#include <cstddef>
#include <string>

#include "ringsync/ringsync.h"

struct CUstream_st;

namespace ringsync::test {

// Returns "" when right, else what was wrong (collective: every rank must call it).
std::string checkDeviceAllreduce(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace,
                                 CUstream_st* stream, const std::string& wantBackend);
// Reduce-scatter: send holds size() blocks of `count`, this rank's block checked (in place: recv is
// that block of send). All-gather: every rank's block in rank order (in place: send is this rank's
// block of recv).
std::string checkDeviceReduceScatter(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace,
                                     CUstream_st* stream, const std::string& wantBackend);
std::string checkDeviceAllgather(Communicator& comm, DataType type, std::size_t count, bool inPlace,
                                 CUstream_st* stream, const std::string& wantBackend);
std::string checkDeviceBroadcast(Communicator& comm, DataType type, std::size_t count, int root, CUstream_st* stream,
                                 const std::string& wantBackend);

}  // namespace ringsync::test
