// All-gather (list and single-tensor forms) and reduce-scatter (both forms) of RingsyncBackend;
// every all-gather and reduce-scatter of the backend (the coalesced ones too) goes through
// allgatherInto and reduceScatterInto (gather_scatter.h).
#include <ATen/ATen.h>

#include <string>
#include <utility>

#include "gather_scatter.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"
#include "tensor_staging.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

template <typename T> const T& single(const std::vector<T>& list, const char* call) {
  if (list.size() != 1)
    throw InvalidArgument(std::string("ringsync backend: ") + call + " takes one tensor per rank, got a list of " +
                          std::to_string(list.size()));
  return list[0];
}

}  // namespace

void allgatherInto(Communicator& comm, const StagedTensor& send, const at::Tensor& block) {
  if (block.device().is_cpu()) {
    comm.allgather(send.data(), block.data_ptr(), send.count(), send.wireType());
    return;
  }
  const StagedTensor hostSend(send.dense().cpu(), /*copyIn=*/true);
  const at::Tensor hostBlock = at::empty(block.sizes(), block.options().device(at::kCPU));
  comm.allgather(hostSend.data(), hostBlock.data_ptr(), hostSend.count(), hostSend.wireType());
  block.copy_(hostBlock);
}

void reduceScatterInto(Communicator& comm, const StagedTensor& whole, const at::Tensor& out, ReduceOp op,
                       CUstream_st* cudaStream) {
  const ReduceOp onWire = wireOp(whole.dense().scalar_type(), op);
  const std::size_t blockCount = whole.count() / static_cast<std::size_t>(comm.size());
  // A contiguous `out` of the whole's dtype and device receives the block itself; any other goes
  // through a dense block copied into it.
  const at::Tensor& dense = whole.dense();
  const bool direct = out.is_contiguous() && out.scalar_type() == dense.scalar_type() && out.device() == dense.device();
  const at::Tensor target = direct ? out : at::empty({out.numel()}, dense.options());
  comm.reduceScatter(whole.data(), target.data_ptr(), blockCount, whole.wireType(), onWire, cudaStream);
  if (!direct) out.copy_(target.view(out.sizes()));
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allgather(std::vector<std::vector<at::Tensor>>& outputLists,
                                                            std::vector<at::Tensor>& inputs,
                                                            const ::c10d::AllgatherOptions& opts) {
  const at::Tensor& input = single(inputs, "allgather");
  const std::vector<at::Tensor>& outputs = single(outputLists, "allgather");
  if (static_cast<int>(outputs.size()) != getSize())
    throw InvalidArgument("ringsync backend: allgather needs " + std::to_string(getSize()) +
                          " output tensors (one per rank), got " + std::to_string(outputs.size()));
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].scalar_type() != input.scalar_type() || outputs[i].numel() != input.numel())
      throw InvalidArgument("ringsync backend: allgather output " + std::to_string(i) + " is " + shapeText(outputs[i]) +
                            ", the input is " + shapeText(input));
  checkDtype(input, "allgather");
  std::vector<at::Tensor> tensors = outputs;
  tensors.push_back(input);
  const CallerStream stream(tensors, "allgather");
  const at::Tensor block = at::empty({getSize(), input.numel()}, input.options());
  auto collective = [send = StagedTensor(input, true), block, outputs](Communicator& comm) {
    allgatherInto(comm, send, block);
    for (std::size_t r = 0; r < outputs.size(); ++r)
      outputs[r].copy_(block[static_cast<int64_t>(r)].view(outputs[r].sizes()));
  };
  return submit(::c10d::OpType::ALLGATHER, stream, outputs, std::move(collective), opts.asyncOp);
}

#if RINGSYNC_C10D_SINGLE_NAMES
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::all_gather_single(at::Tensor& output, at::Tensor& input,
                                                                    const ::c10d::AllgatherOptions& opts) {
  return gatherSingle(output, input, opts);
}
#endif

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const ::c10d::AllgatherOptions& opts) {
  return gatherSingle(output, input, opts);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::gatherSingle(at::Tensor& output, at::Tensor& input,
                                                               const ::c10d::AllgatherOptions& opts) {
  const int64_t want = getSize() * input.numel();
  if (output.scalar_type() != input.scalar_type() || output.numel() != want)
    throw InvalidArgument("ringsync backend: all_gather_into_tensor output must hold size * input.numel() = " +
                          elementsText(want, input) + ", has " + elementsText(output.numel(), output));
  checkDtype(input, "all_gather_into_tensor");
  const CallerStream stream({output, input}, "all_gather_into_tensor");
  auto collective = [send = StagedTensor(input, true), receive = StagedTensor(output, false)](Communicator& comm) {
    allgatherInto(comm, send, receive.dense());
    receive.finish();
  };
  return submit(::c10d::OpType::_ALLGATHER_BASE, stream, {output}, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputLists,
                                                                 const ::c10d::ReduceScatterOptions& opts) {
  const ReduceOp op = ringsyncOp(opts.reduceOp, "reduce_scatter");
  const at::Tensor& output = single(outputs, "reduce_scatter");
  const std::vector<at::Tensor>& inputs = single(inputLists, "reduce_scatter");
  if (static_cast<int>(inputs.size()) != getSize())
    throw InvalidArgument("ringsync backend: reduce_scatter needs " + std::to_string(getSize()) +
                          " input tensors (one per rank), got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].scalar_type() != output.scalar_type() || inputs[i].numel() != output.numel())
      throw InvalidArgument("ringsync backend: reduce_scatter input " + std::to_string(i) + " is " +
                            shapeText(inputs[i]) + ", the output is " + shapeText(output));
  checkDtype(output, "reduce_scatter", op);
  std::vector<at::Tensor> tensors = inputs;
  tensors.push_back(output);
  const CallerStream stream(tensors, "reduce_scatter");
  std::vector<at::Tensor> flat;
  flat.reserve(inputs.size());
  for (const at::Tensor& t : inputs) flat.push_back(t.reshape(-1));
  return reduceScatterBlock(at::cat(flat), output, op, stream, opts.asyncOp);  // cat: a copy
}

#if RINGSYNC_C10D_SINGLE_NAMES
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduce_scatter_single(at::Tensor& output, at::Tensor& input,
                                                                        const ::c10d::ReduceScatterOptions& opts) {
  return reduceScatterSingle(output, input, opts);
}
#endif

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const ::c10d::ReduceScatterOptions& opts) {
  return reduceScatterSingle(output, input, opts);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduceScatterSingle(at::Tensor& output, at::Tensor& input,
                                                                      const ::c10d::ReduceScatterOptions& opts) {
  const ReduceOp op = ringsyncOp(opts.reduceOp, "reduce_scatter_tensor");
  const int64_t want = getSize() * output.numel();
  if (output.scalar_type() != input.scalar_type() || input.numel() != want)
    throw InvalidArgument("ringsync backend: reduce_scatter_tensor input must hold size * output.numel() = " +
                          elementsText(want, output) + ", has " + elementsText(input.numel(), input));
  checkDtype(output, "reduce_scatter_tensor", op);
  const CallerStream stream({output, input}, "reduce_scatter_tensor");
  // The input is only read (ringsync's reduce-scatter): no private copy.
  return reduceScatterBlock(input.reshape(-1), output, op, stream, opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduceScatterBlock(at::Tensor block, at::Tensor out, ReduceOp op,
                                                                     const CallerStream& stream, bool asyncOp) {
  CUstream_st* cudaStream = stream.cudaStream();
  auto collective = [whole = StagedTensor(block, true), out, op, cudaStream](Communicator& comm) {
    reduceScatterInto(comm, whole, out, op, cudaStream);
  };
  return submit(::c10d::OpType::REDUCE_SCATTER, stream, {out}, std::move(collective), asyncOp);
}

}  // namespace ringsync::torch_backend
