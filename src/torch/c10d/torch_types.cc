#include "torch_types.h"

#include <ATen/ATen.h>

#include <string>

#include <algorithm>
#include <cctype>

#include "ringsync/errors.h"

namespace ringsync::torch_backend {
namespace {

const char* torchOpName(::c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case ::c10d::ReduceOp::SUM: return "SUM";
    case ::c10d::ReduceOp::AVG: return "AVG";
    case ::c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case ::c10d::ReduceOp::MIN: return "MIN";
    case ::c10d::ReduceOp::MAX: return "MAX";
    case ::c10d::ReduceOp::BAND: return "BAND";
    case ::c10d::ReduceOp::BOR: return "BOR";
    case ::c10d::ReduceOp::BXOR: return "BXOR";
    case ::c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

std::optional<DataType> nativeType(at::ScalarType dtype) {
  switch (dtype) {
    case at::kChar: return DataType::kInt8;
    case at::kByte: return DataType::kUInt8;
    case at::kInt: return DataType::kInt32;
    case at::kUInt32: return DataType::kUInt32;
    case at::kLong: return DataType::kInt64;
    case at::kUInt64: return DataType::kUInt64;
    case at::kHalf: return DataType::kFloat16;
    case at::kBFloat16: return DataType::kBFloat16;
    case at::kFloat: return DataType::kFloat32;
    case at::kDouble: return DataType::kFloat64;
    default: return std::nullopt;
  }
}

std::string opText(ReduceOp op) { return std::string("'") + reduceOpName(op) + "'"; }

}  // namespace

std::string dtypeName(at::ScalarType dtype) {
  // torch's own table (torch::utils::getDtypeNames) is not exported from libtorch_python. Python's
  // names are c10's in lower case but for the C-style ones.
  switch (dtype) {
    case at::kByte: return "torch.uint8";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kHalf: return "torch.float16";
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kComplexHalf: return "torch.complex32";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    default: break;
  }
  std::string name = c10::toString(dtype);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return "torch." + name;
}

std::string shapeText(const at::Tensor& tensor) {
  return dtypeName(tensor.scalar_type()) + " x " + std::to_string(tensor.numel());
}

std::string elementsText(int64_t count, const at::Tensor& like) {
  return std::to_string(count) + " " + dtypeName(like.scalar_type()) + " elements";
}

ReduceOp ringsyncOp(const ::c10d::ReduceOp& op, const char* call) {
  switch (op.op_) {
    case ::c10d::ReduceOp::SUM: return ReduceOp::kSum;
    case ::c10d::ReduceOp::AVG: return ReduceOp::kAvg;
    case ::c10d::ReduceOp::PRODUCT: return ReduceOp::kProd;
    case ::c10d::ReduceOp::MIN: return ReduceOp::kMin;
    case ::c10d::ReduceOp::MAX: return ReduceOp::kMax;
    default:
      throw InvalidArgument(std::string("ringsync backend: ") + call + " with ReduceOp." + torchOpName(op.op_) +
                            " is not supported (ringsync reduces SUM, AVG, PRODUCT, MIN, MAX)");
  }
}

void checkDtype(const at::Tensor& tensor, const char* call, std::optional<ReduceOp> op) {
  const at::ScalarType dtype = tensor.scalar_type();
  if (nativeType(dtype)) return;
  const std::string prefix = std::string("ringsync backend: ") + call + " of a " + dtypeName(dtype) + " tensor";
  if (dtype == at::kBool) {
    if (!op || *op != ReduceOp::kAvg) return;
    throw InvalidArgument(prefix + " with op " + opText(*op) +
                          " is not defined (sum/max are logical or, prod/min logical and)");
  }
  if (dtype == at::kComplexFloat || dtype == at::kComplexDouble) {
    if (!op || *op == ReduceOp::kSum || *op == ReduceOp::kAvg) return;
    throw InvalidArgument(prefix + " with op " + opText(*op) +
                          " is not defined (complex tensors are reduced as their real and imaginary parts: sum, avg)");
  }
  throw InvalidArgument(prefix +
                        ": ringsync carries int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
                        "float32, float64, bool and complex (as float pairs); convert the tensor (e.g. "
                        "int16 -> int32) first");
}

WireFormat wireFormat(at::ScalarType dtype) {
  if (const auto native = nativeType(dtype)) return {*native, 1};
  if (dtype == at::kBool) return {DataType::kUInt8, 1};
  if (dtype == at::kComplexFloat) return {DataType::kFloat32, 2};
  if (dtype == at::kComplexDouble) return {DataType::kFloat64, 2};
  throw InvalidArgument("ringsync backend: no wire format for " + dtypeName(dtype) + " (checkDtype first)");
}

ReduceOp wireOp(at::ScalarType dtype, ReduceOp op) {
  if (dtype != at::kBool) return op;
  return (op == ReduceOp::kSum || op == ReduceOp::kMax) ? ReduceOp::kMax : ReduceOp::kMin;
}

at::Tensor reduceLocally(const std::vector<at::Tensor>& tensors, ReduceOp op) {
  at::Tensor result = tensors[0].clone(at::MemoryFormat::Contiguous);
  const bool logical = result.scalar_type() == at::kBool;
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    switch (logical ? wireOp(at::kBool, op) : op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: result.add_(t); break;
      case ReduceOp::kProd: result.mul_(t); break;
      case ReduceOp::kMin: result = logical ? result.logical_and_(t) : at::minimum(result, t); break;
      case ReduceOp::kMax: result = logical ? result.logical_or_(t) : at::maximum(result, t); break;
    }
  }
  return result.contiguous();
}

void divideInPlace(const at::Tensor& tensor, int64_t divisor) {
  if (at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false)) {
    tensor.div_(divisor, "trunc");
  } else {
    tensor.div_(divisor);
  }
}

}  // namespace ringsync::torch_backend
