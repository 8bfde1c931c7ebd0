#include "ringsync/types.h"

#include <cstdint>

namespace ringsync {

bool isValid(DataType type) {
  const int value = static_cast<int>(type);
  return value >= static_cast<int>(DataType::kInt8) && value <= static_cast<int>(DataType::kFloat64);
}

bool isValid(ReduceOp op) {
  const int value = static_cast<int>(op);
  return value >= static_cast<int>(ReduceOp::kSum) && value <= static_cast<int>(ReduceOp::kAvg);
}

bool isFloatingPoint(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64;
}

std::size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUInt8: return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

const char* dataTypeName(DataType type) {
  switch (type) {
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kUInt32: return "uint32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt64: return "uint64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
  }
  return "invalid-type";
}

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kAvg: return "avg";
  }
  return "invalid-op";
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (DataType type : kAllDataTypes)
    if (name == dataTypeName(type)) return type;
  // nccl-tests' spellings
  if (name == "int8_t" || name == "char") return DataType::kInt8;
  if (name == "uint8_t") return DataType::kUInt8;
  if (name == "int" || name == "int32_t") return DataType::kInt32;
  if (name == "uint32_t") return DataType::kUInt32;
  if (name == "int64_t") return DataType::kInt64;
  if (name == "uint64_t") return DataType::kUInt64;
  if (name == "half" || name == "fp16") return DataType::kFloat16;
  if (name == "bf16") return DataType::kBFloat16;
  if (name == "float" || name == "fp32") return DataType::kFloat32;
  if (name == "double" || name == "fp64") return DataType::kFloat64;
  return std::nullopt;
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (ReduceOp op : kAllReduceOps)
    if (name == reduceOpName(op)) return op;
  return std::nullopt;
}

}  // namespace ringsync
