// Element types and reduction operators understood by every backend.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ringsync {

enum class DataType { kInt8, kUInt8, kInt32, kUInt32, kInt64, kUInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };

// kAvg divides the sum by the number of ranks once, on the chunk each rank owns. For integer
// types the quotient is truncated toward zero (C++ integer division, as NCCL does).
enum class ReduceOp { kSum, kProd, kMin, kMax, kAvg };

inline constexpr DataType kAllDataTypes[] = {DataType::kInt8,    DataType::kUInt8,    DataType::kInt32,
                                             DataType::kUInt32,  DataType::kInt64,    DataType::kUInt64,
                                             DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                             DataType::kFloat64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                             ReduceOp::kAvg};

bool isValid(DataType type);
bool isValid(ReduceOp op);
bool isFloatingPoint(DataType type);

// Size of one element in bytes; 0 for a value outside the enum.
std::size_t dataTypeSize(DataType type);

// Short lower-case names as printed in errors and bench tables: "float32", "sum".
const char* dataTypeName(DataType type);
const char* reduceOpName(ReduceOp op);

// Inverse of the names above; also accepts nccl-tests' spellings ("float", "half", "bf16", "int").
std::optional<DataType> parseDataType(std::string_view name);
std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace ringsync
