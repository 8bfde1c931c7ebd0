// The coalesced collectives of RingsyncBackend: several all-gathers or reduce-scatters issued as
// one call (torch's functional collectives, DTensor's redistribute, _coalescing_manager). One job
// runs them in order, each through allgatherInto / reduceScatterInto (gather_scatter.h), and the
// Work completes when the last has.
#include <ATen/ATen.h>

#include <string>
#include <utility>

#include "gather_scatter.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

void requirePairs(std::size_t outputs, std::size_t inputs, const char* call) {
  if (outputs != inputs)
    throw InvalidArgument(std::string("ringsync backend: ") + call + " needs as many outputs as inputs, got " +
                          std::to_string(outputs) + " and " + std::to_string(inputs));
}

std::vector<at::Tensor> joined(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  std::vector<at::Tensor> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace

// outputLists[r][i] = rank r's inputs[i] (torch's layout: one list per rank).
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                                      std::vector<at::Tensor>& inputs,
                                                                      const ::c10d::AllgatherOptions& opts) {
  const char* call = "allgather_coalesced";
  if (static_cast<int>(outputLists.size()) != getSize())
    throw InvalidArgument(std::string("ringsync backend: ") + call + " needs " + std::to_string(getSize()) +
                          " output lists (one per rank), got " + std::to_string(outputLists.size()));
  std::vector<at::Tensor> outputs;
  for (std::size_t r = 0; r < outputLists.size(); ++r) {
    requirePairs(outputLists[r].size(), inputs.size(), call);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const at::Tensor& out = outputLists[r][i];
      if (out.scalar_type() != inputs[i].scalar_type() || out.numel() != inputs[i].numel())
        throw InvalidArgument(std::string("ringsync backend: ") + call + " output " + std::to_string(i) + " for rank " +
                              std::to_string(r) + " holds " + elementsText(out.numel(), out) + ", input " +
                              std::to_string(i) + " " + elementsText(inputs[i].numel(), inputs[i]));
      outputs.push_back(out);
    }
  }
  for (const at::Tensor& t : inputs) checkDtype(t, call);
  const CallerStream stream(joined(outputs, inputs), call);
  std::vector<StagedTensor> sends;
  for (const at::Tensor& t : inputs) sends.emplace_back(t, true);
  const int size = getSize();
  auto collective = [sends = std::move(sends), outputLists, size](Communicator& comm) {
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const at::Tensor& input = sends[i].dense();
      const at::Tensor block = at::empty({size, input.numel()}, input.options());
      allgatherInto(comm, sends[i], block);
      for (int r = 0; r < size; ++r) {
        const at::Tensor& out = outputLists[static_cast<std::size_t>(r)][i];
        out.copy_(block[r].view(out.sizes()));
      }
    }
  };
  return submit(::c10d::OpType::ALLGATHER_COALESCED, stream, outputs, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const ::c10d::AllgatherOptions& opts) {
  const char* call = "allgather_into_tensor_coalesced";
  requirePairs(outputs.size(), inputs.size(), call);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int64_t want = getSize() * inputs[i].numel();
    if (outputs[i].scalar_type() != inputs[i].scalar_type() || outputs[i].numel() != want)
      throw InvalidArgument(std::string("ringsync backend: ") + call + " output " + std::to_string(i) +
                            " must hold size * input.numel() = " + elementsText(want, inputs[i]) + ", has " +
                            elementsText(outputs[i].numel(), outputs[i]));
    checkDtype(inputs[i], call);
  }
  const CallerStream stream(joined(outputs, inputs), call);
  std::vector<std::pair<StagedTensor, StagedTensor>> pairs;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    pairs.emplace_back(StagedTensor(inputs[i], true), StagedTensor(outputs[i], false));
  auto collective = [pairs = std::move(pairs)](Communicator& comm) {
    for (const auto& [send, receive] : pairs) {
      allgatherInto(comm, send, receive.dense());
      receive.finish();
    }
  };
  return submit(::c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, stream, outputs, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const ::c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor_coalesced";
  const ReduceOp op = ringsyncOp(opts.reduceOp, call);
  requirePairs(outputs.size(), inputs.size(), call);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int64_t want = getSize() * outputs[i].numel();
    if (outputs[i].scalar_type() != inputs[i].scalar_type() || inputs[i].numel() != want)
      throw InvalidArgument(std::string("ringsync backend: ") + call + " input " + std::to_string(i) +
                            " must hold size * output.numel() = " + elementsText(want, outputs[i]) + ", has " +
                            elementsText(inputs[i].numel(), inputs[i]));
    checkDtype(outputs[i], call, op);
  }
  const CallerStream stream(joined(outputs, inputs), call);
  std::vector<StagedTensor> wholes;  // the inputs, only read by the reduce-scatter
  for (const at::Tensor& t : inputs) wholes.emplace_back(t.reshape(-1), true);
  auto collective = [wholes = std::move(wholes), outputs, op, cudaStream = stream.cudaStream()](Communicator& comm) {
    for (std::size_t i = 0; i < wholes.size(); ++i) reduceScatterInto(comm, wholes[i], outputs[i], op, cudaStream);
  };
  return submit(::c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, stream, outputs, std::move(collective), opts.asyncOp);
}

}  // namespace ringsync::torch_backend
