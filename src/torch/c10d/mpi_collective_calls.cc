// gather, scatter, alltoall and alltoall_base (all_to_all_single) of RingsyncBackend: arguments
// checked on the caller's thread, then one job that stages the tensors in host memory and hands
// them to MPI (mpi_collectives.h). CUDA tensors go through host copies made on the caller's stream.
#include <ATen/ATen.h>

#include <numeric>
#include <string>
#include <utility>

#include "mpi_collectives.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

[[noreturn]] void badArgument(const char* call, const std::string& what) {
  throw InvalidArgument(std::string("ringsync backend: ") + call + " " + what);
}

void requireLike(const at::Tensor& t, const at::Tensor& like, const char* call, const std::string& name) {
  if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel())
    badArgument(call, name + " is " + shapeText(t) + ", expected " + shapeText(like));
}

// What MPI reads: `t` itself when it is a contiguous host tensor, else a host copy.
at::Tensor hostInput(const at::Tensor& t) { return t.is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous(); }

// What MPI writes for `t`: `t` itself when it is a contiguous host tensor, else a host block
// copied into it afterwards (copyBack).
at::Tensor hostOutput(const at::Tensor& t) {
  if (t.is_cpu() && t.is_contiguous()) return t;
  return at::empty(t.sizes(), t.options().device(at::kCPU));
}
void copyBack(const at::Tensor& t, const at::Tensor& host) {
  if (!host.is_same(t)) t.copy_(host);
}

// The dim-0 split of an all_to_all_single tensor, in elements per rank (torch's meaning: empty
// splits divide dim 0 equally).
std::vector<std::int64_t> elementCounts(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                                        const char* name) {
  const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const std::int64_t rowElements = rows == 0 ? 0 : t.numel() / rows;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size));
  if (splits.empty()) {
    if (rows % size != 0)
      badArgument("all_to_all_single", std::string("without split sizes divides dim 0 equally: the ") + name + "'s " +
                                           std::to_string(rows) + " rows do not divide by " + std::to_string(size) +
                                           " ranks");
    for (auto& c : counts) c = rows / size * rowElements;
    return counts;
  }
  if (static_cast<int>(splits.size()) != size || std::accumulate(splits.begin(), splits.end(), std::int64_t{0}) != rows)
    badArgument("all_to_all_single", std::string("the ") + name + " split sizes must be " + std::to_string(size) +
                                         " numbers adding up to dim 0 (" + std::to_string(rows) + ")");
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (splits[r] < 0) badArgument("all_to_all_single", std::string("a negative ") + name + " split size");
    counts[r] = splits[r] * rowElements;
  }
  return counts;
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::gather(std::vector<std::vector<at::Tensor>>& outputLists,
                                                         std::vector<at::Tensor>& inputs,
                                                         const ::c10d::GatherOptions& opts) {
  checkRank(opts.rootRank, "gather");
  const int root = static_cast<int>(opts.rootRank);
  if (inputs.size() != 1) badArgument("gather", "takes one input tensor, got " + std::to_string(inputs.size()));
  const at::Tensor input = inputs[0];
  std::vector<at::Tensor> outputs;
  if (getRank() == root) {
    if (outputLists.size() != 1 || static_cast<int>(outputLists[0].size()) != getSize())
      badArgument("gather", "at the root needs one list of " + std::to_string(getSize()) + " output tensors");
    outputs = outputLists[0];
    for (std::size_t r = 0; r < outputs.size(); ++r)
      requireLike(outputs[r], input, "gather", "output " + std::to_string(r));
  } else if (!outputLists.empty() && !(outputLists.size() == 1 && outputLists[0].empty())) {
    badArgument("gather", "takes no output tensors on a rank that is not the root");
  }
  std::vector<at::Tensor> tensors = outputs;
  tensors.push_back(input);
  const CallerStream stream(tensors, "gather");
  const int size = getSize();
  auto collective = [input, outputs, root, size, mpi = mpi_](Communicator&) {
    const at::Tensor send = hostInput(input);
    at::Tensor block;
    if (!outputs.empty()) block = at::empty({size * send.numel()}, send.options());
    gatherThroughMpi(*mpi, send, block, root);
    for (std::size_t r = 0; r < outputs.size(); ++r)
      outputs[r].copy_(block.narrow(0, static_cast<int64_t>(r) * send.numel(), send.numel()).view(outputs[r].sizes()));
  };
  return submit(::c10d::OpType::GATHER, stream, outputs, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputLists,
                                                          const ::c10d::ScatterOptions& opts) {
  checkRank(opts.rootRank, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  if (outputs.size() != 1) badArgument("scatter", "takes one output tensor, got " + std::to_string(outputs.size()));
  const at::Tensor output = outputs[0];
  std::vector<at::Tensor> inputs;
  if (getRank() == root) {
    if (inputLists.size() != 1 || static_cast<int>(inputLists[0].size()) != getSize())
      badArgument("scatter", "at the root needs one list of " + std::to_string(getSize()) + " input tensors");
    inputs = inputLists[0];
    for (std::size_t r = 0; r < inputs.size(); ++r)
      requireLike(inputs[r], output, "scatter", "input " + std::to_string(r));
  } else if (!inputLists.empty() && !(inputLists.size() == 1 && inputLists[0].empty())) {
    badArgument("scatter", "takes no input tensors on a rank that is not the root");
  }
  std::vector<at::Tensor> tensors = inputs;
  tensors.push_back(output);
  const CallerStream stream(tensors, "scatter");
  auto collective = [inputs, output, root, mpi = mpi_](Communicator&) {
    at::Tensor block;
    if (!inputs.empty()) {
      std::vector<at::Tensor> flat;
      for (const at::Tensor& t : inputs) flat.push_back(hostInput(t).reshape(-1));
      block = at::cat(flat);
    }
    const at::Tensor recv = hostOutput(output);
    scatterThroughMpi(*mpi, block, recv, root);
    copyBack(output, recv);
  };
  return submit(::c10d::OpType::SCATTER, stream, outputs, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const ::c10d::AllToAllOptions& opts) {
  if (static_cast<int>(outputs.size()) != getSize() || static_cast<int>(inputs.size()) != getSize())
    badArgument("all_to_all", "needs " + std::to_string(getSize()) + " input and output tensors (one per rank), got " +
                                  std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  std::vector<std::int64_t> sendCounts, recvCounts;
  for (std::size_t r = 0; r < inputs.size(); ++r) {
    if (inputs[r].scalar_type() != inputs[0].scalar_type() || outputs[r].scalar_type() != inputs[0].scalar_type())
      badArgument("all_to_all", "takes tensors of one dtype: " + dtypeName(inputs[0].scalar_type()) + ", " +
                                    dtypeName(inputs[r].scalar_type()) + " and " + dtypeName(outputs[r].scalar_type()));
    sendCounts.push_back(inputs[r].numel());
    recvCounts.push_back(outputs[r].numel());
  }
  std::vector<at::Tensor> tensors = outputs;
  tensors.insert(tensors.end(), inputs.begin(), inputs.end());
  const CallerStream stream(tensors, "all_to_all");
  auto collective = [inputs, outputs, sendCounts, recvCounts, mpi = mpi_](Communicator&) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : inputs) flat.push_back(hostInput(t).reshape(-1));
    const at::Tensor send = at::cat(flat);
    const std::int64_t total = std::accumulate(recvCounts.begin(), recvCounts.end(), std::int64_t{0});
    const at::Tensor recv = at::empty({total}, send.options());
    alltoallThroughMpi(*mpi, send, sendCounts, recv, recvCounts, "all_to_all");
    std::int64_t offset = 0;
    for (std::size_t r = 0; r < outputs.size(); ++r) {
      outputs[r].copy_(recv.narrow(0, offset, recvCounts[r]).view(outputs[r].sizes()));
      offset += recvCounts[r];
    }
  };
  return submit(::c10d::OpType::ALLTOALL, stream, outputs, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const ::c10d::AllToAllOptions& opts) {
  if (output.scalar_type() != input.scalar_type())
    badArgument("all_to_all_single",
                "output is " + dtypeName(output.scalar_type()) + ", input " + dtypeName(input.scalar_type()));
  auto sendCounts = elementCounts(input, inputSplits, getSize(), "input");
  auto recvCounts = elementCounts(output, outputSplits, getSize(), "output");
  const CallerStream stream({output, input}, "all_to_all_single");
  auto collective = [input, output, sendCounts, recvCounts, mpi = mpi_](Communicator&) {
    const at::Tensor send = hostInput(input);
    const at::Tensor recv = hostOutput(output);
    alltoallThroughMpi(*mpi, send, sendCounts, recv, recvCounts, "all_to_all_single");
    copyBack(output, recv);
  };
  return submit(::c10d::OpType::ALLTOALL_BASE, stream, {output}, std::move(collective), opts.asyncOp);
}

}  // namespace ringsync::torch_backend
