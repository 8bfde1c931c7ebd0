#include "gpu_collective_checks.h"

#include <cuda_runtime_api.h>

#include "closed_form.h"
#include "cuda/device_memory.h"
#include "support/test_support.h"

namespace ringsync::test {
namespace {

cuda::DeviceBuffer toDevice(const TypedBuffer& host) {
  cuda::DeviceBuffer device(host.bytes());
  if (host.bytes()) RINGSYNC_CHECK_CUDA(cudaMemcpy(device.data(), host.data(), host.bytes(), cudaMemcpyHostToDevice));
  // cudaMemcpy from pageable memory may return before its DMA lands, and it is ordered only on the
  // legacy default stream, which the non-blocking streams used next do not wait for: wait here.
  RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
  return device;
}

void fromDevice(TypedBuffer& host, const void* device, CUstream_st* stream) {
  // The call is ordered on `stream`: wait for it as a caller would before reading.
  RINGSYNC_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (host.bytes()) RINGSYNC_CHECK_CUDA(cudaMemcpy(host.data(), device, host.bytes(), cudaMemcpyDeviceToHost));
}

std::string placementProblem(const Communicator& comm, const std::string& wantBackend) {
  const Placement placement = comm.lastPlacement();
  int current = -1;
  cudaGetDevice(&current);
  if (placement.backend != wantBackend) return "ran on " + placement.backend + ", expected " + wantBackend;
  if (placement.device != current) return "placement names device " + std::to_string(placement.device);
  return "";
}

}  // namespace

std::string checkDeviceAllreduce(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace,
                                 CUstream_st* stream, const std::string& wantBackend) {
  TypedBuffer send(type, count), result(type, count);
  for (std::size_t i = 0; i < count; ++i)
    send.set(i, closed_form::allreduceInput(op, type, comm.rank(), comm.size(), i));
  result.fill(0xA5);
  cuda::DeviceBuffer dsend = toDevice(send), drecv = toDevice(result);
  // count 0 still needs non-null device pointers to be classified as device buffers.
  cuda::DeviceBuffer placeholder(count == 0 ? 16 : 0);
  void* s = count ? dsend.data() : placeholder.data();
  void* r = inPlace ? s : (count ? drecv.data() : static_cast<char*>(placeholder.data()) + 8);
  comm.allreduce(s, r, count, type, op, stream);
  fromDevice(result, r, stream);
  std::string problem = placementProblem(comm, wantBackend);
  for (std::size_t i = 0; i < count && problem.empty(); ++i) {
    const double want = closed_form::allreduceExpected(op, type, comm.size(), i);
    if (result.get(i) != want)
      problem = "element " + std::to_string(i) + " = " + std::to_string(result.get(i)) + ", want " +
                std::to_string(want);
  }
  if (!identicalOnAllRanks(result.data(), result.bytes())) problem += " (results differ between ranks)";
  if (!allRanks(problem.empty()))
    return describe(type, op, count, inPlace) + ": " + (problem.empty() ? "a peer failed" : problem);
  return "";
}

std::string checkDeviceReduceScatter(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace,
                                     CUstream_st* stream, const std::string& wantBackend) {
  const std::size_t n = static_cast<std::size_t>(comm.size()), own = count * static_cast<std::size_t>(comm.rank());
  TypedBuffer send(type, count * n), result(type, count);
  for (std::size_t i = 0; i < count * n; ++i)
    send.set(i, closed_form::allreduceInput(op, type, comm.rank(), comm.size(), i));
  result.fill(0xA5);
  cuda::DeviceBuffer dsend = toDevice(send), drecv = toDevice(result);
  cuda::DeviceBuffer placeholder(count == 0 ? 16 : 0);
  void* s = count ? dsend.data() : placeholder.data();
  void* r = inPlace ? static_cast<std::byte*>(s) + own * dataTypeSize(type)
                    : (count ? drecv.data() : static_cast<char*>(placeholder.data()) + 8);
  comm.reduceScatter(s, r, count, type, op, stream);
  fromDevice(result, r, stream);
  std::string problem = placementProblem(comm, wantBackend);
  for (std::size_t j = 0; j < count && problem.empty(); ++j) {
    const double want = closed_form::allreduceExpected(op, type, comm.size(), own + j);
    if (result.get(j) != want)
      problem = "element " + std::to_string(j) + " = " + std::to_string(result.get(j)) + ", want " +
                std::to_string(want);
  }
  if (!allRanks(problem.empty()))
    return "reducescatter " + describe(type, op, count, inPlace) + ": " + (problem.empty() ? "a peer failed" : problem);
  return "";
}

std::string checkDeviceAllgather(Communicator& comm, DataType type, std::size_t count, bool inPlace,
                                 CUstream_st* stream, const std::string& wantBackend) {
  const std::size_t n = static_cast<std::size_t>(comm.size()), own = count * static_cast<std::size_t>(comm.rank());
  TypedBuffer block(type, count), result(type, count * n);
  result.fill(0xA5);
  for (std::size_t j = 0; j < count; ++j) block.set(j, closed_form::rankValue(comm.rank(), j));
  if (inPlace)
    for (std::size_t j = 0; j < count; ++j) result.set(own + j, closed_form::rankValue(comm.rank(), j));
  cuda::DeviceBuffer dsend = toDevice(block), drecv = toDevice(result);
  cuda::DeviceBuffer placeholder(count == 0 ? 16 : 0);
  void* r = count ? drecv.data() : placeholder.data();
  const void* s = inPlace ? static_cast<const std::byte*>(r) + own * dataTypeSize(type)
                          : (count ? dsend.data() : static_cast<char*>(placeholder.data()) + 8);
  comm.allgather(s, r, count, type, stream);
  fromDevice(result, r, stream);
  std::string problem = placementProblem(comm, wantBackend);
  for (std::size_t i = 0; i < count * n && problem.empty(); ++i)
    if (result.get(i) != closed_form::rankValue(static_cast<int>(i / count), i % count))
      problem = "element " + std::to_string(i) + " wrong";
  if (!identicalOnAllRanks(result.data(), result.bytes())) problem += " (results differ between ranks)";
  if (!allRanks(problem.empty()))
    return std::string("allgather ") + dataTypeName(type) + " count=" + std::to_string(count) +
           (inPlace ? " in place: " : ": ") + (problem.empty() ? "a peer failed" : problem);
  return "";
}

std::string checkDeviceBroadcast(Communicator& comm, DataType type, std::size_t count, int root, CUstream_st* stream,
                                 const std::string& wantBackend) {
  TypedBuffer data(type, count);
  for (std::size_t i = 0; i < count; ++i) data.set(i, comm.rank() == root ? closed_form::rankValue(root, i) : 0.0);
  cuda::DeviceBuffer device = toDevice(data);
  cuda::DeviceBuffer placeholder(count == 0 ? 16 : 0);
  void* buf = count ? device.data() : placeholder.data();
  comm.broadcast(buf, count, type, root, stream);
  fromDevice(data, buf, stream);
  std::string problem = placementProblem(comm, wantBackend);
  for (std::size_t i = 0; i < count && problem.empty(); ++i)
    if (data.get(i) != closed_form::rankValue(root, i)) problem = "element " + std::to_string(i) + " wrong";
  if (!allRanks(problem.empty()))
    return std::string("broadcast ") + dataTypeName(type) + " count=" + std::to_string(count) +
           " root=" + std::to_string(root) + ": " + (problem.empty() ? "a peer failed" : problem);
  return "";
}

}  // namespace ringsync::test
