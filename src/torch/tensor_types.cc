// torch tensors as ringsync buffers: the dtype table, the checks, and the one-tensor collectives
// of <ringsync/torch.h>.
#include <string>

#include <c10/util/Exception.h>

#include "ringsync/errors.h"
#include "ringsync/torch.h"
#include "tensor_types.h"

namespace ringsync::torch {

std::optional<DataType> dataTypeOf(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kChar: return DataType::kInt8;
    case c10::kByte: return DataType::kUInt8;
    case c10::kInt: return DataType::kInt32;
    case c10::kUInt32: return DataType::kUInt32;
    case c10::kLong: return DataType::kInt64;
    case c10::kUInt64: return DataType::kUInt64;
    case c10::kHalf: return DataType::kFloat16;
    case c10::kBFloat16: return DataType::kBFloat16;
    case c10::kFloat: return DataType::kFloat32;
    case c10::kDouble: return DataType::kFloat64;
    default: return std::nullopt;
  }
}

c10::ScalarType scalarTypeOf(DataType type) {
  switch (type) {
    case DataType::kInt8: return c10::kChar;
    case DataType::kUInt8: return c10::kByte;
    case DataType::kInt32: return c10::kInt;
    case DataType::kUInt32: return c10::kUInt32;
    case DataType::kInt64: return c10::kLong;
    case DataType::kUInt64: return c10::kUInt64;
    case DataType::kFloat16: return c10::kHalf;
    case DataType::kBFloat16: return c10::kBFloat16;
    case DataType::kFloat32: return c10::kFloat;
    case DataType::kFloat64: return c10::kDouble;
  }
  throw InvalidArgument("ringsync::torch::scalarTypeOf: type=" + std::to_string(static_cast<int>(type)) +
                        " is not a ringsync::DataType");
}

namespace detail {

std::string describeTensor(const at::Tensor& tensor) {
  if (!tensor.defined()) return "undefined tensor";
  const auto type = dataTypeOf(tensor.scalar_type());
  std::string text = type ? dataTypeName(*type) : std::string("torch dtype ") + c10::toString(tensor.scalar_type());
  text += " tensor of shape [";
  for (int64_t d = 0; d < tensor.dim(); ++d) text += (d ? ", " : "") + std::to_string(tensor.size(d));
  return text + "] on " + tensor.device().str();
}

DataType requireDataType(const at::Tensor& tensor, const std::string& who) {
  if (const auto type = dataTypeOf(tensor.scalar_type())) return *type;
  throw InvalidArgument(who + ": a " + describeTensor(tensor) +
                        "; ringsync carries int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32 "
                        "and float64 (convert the tensor first)");
}

void requireDense(const at::Tensor& tensor, const std::string& who) {
  if (!tensor.defined()) throw InvalidArgument(who + ": the tensor is undefined");
  if (tensor.layout() != c10::kStrided || !tensor.is_contiguous())
    throw InvalidArgument(who + ": the " + describeTensor(tensor) +
                          " is not a contiguous dense tensor; pass tensor.contiguous() and copy the result back");
}

}  // namespace detail

void allreduce(Communicator& comm, const at::Tensor& tensor, ReduceOp op) {
  const std::string who = "ringsync::torch::allreduce";
  detail::requireDense(tensor, who);
  const DataType type = detail::requireDataType(tensor, who);
  CUstream_st* stream = detail::currentStream(tensor, who);
  void* data = tensor.data_ptr();
  comm.allreduce(data, data, static_cast<std::size_t>(tensor.numel()), type, op, stream);
}

void broadcast(Communicator& comm, const at::Tensor& tensor, int root) {
  const std::string who = "ringsync::torch::broadcast";
  detail::requireDense(tensor, who);
  CUstream_st* stream = detail::currentStream(tensor, who);
  // Nothing is reduced: every dtype travels as its bytes.
  comm.broadcast(tensor.data_ptr(), tensor.nbytes(), DataType::kUInt8, root, stream);
}

}  // namespace ringsync::torch
