#include "array_view.h"

#include <cstdint>
#include <optional>
#include <string>

#include "ringsync/errors.h"
#include "ringsync/version.h"

namespace ringsync::python {
namespace {

namespace dl = nb::dlpack;

// str(object) (nb::str(accessor) would reinterpret instead of converting).
std::string text(nb::handle object) { return nb::str(object).c_str(); }

[[noreturn]] void reject(const char* call, const char* name, const std::string& what) {
  throw InvalidArgument(std::string(call) + ": " + name + " " + what);
}

std::string supportedList() {
  std::string list;
  for (DataType type : kAllDataTypes) list += std::string(list.empty() ? "" : ", ") + dataTypeName(type);
  return list + " (bfloat16 from torch, or numpy with ml_dtypes)";
}

std::string dtypeText(dl::dtype t) {
  const char* prefix = "dlpack-code";
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Int: prefix = "int"; break;
    case dl::dtype_code::UInt: prefix = "uint"; break;
    case dl::dtype_code::Float: prefix = "float"; break;
    case dl::dtype_code::Bfloat: prefix = "bfloat"; break;
    case dl::dtype_code::Complex: prefix = "complex"; break;
    case dl::dtype_code::Bool: return "bool";
    default: break;
  }
  std::string described = prefix + std::to_string(t.bits);
  if (t.lanes != 1) described += "x" + std::to_string(t.lanes);
  return described;
}

// The ringsync type of a DLPack dtype, or InvalidArgument saying what to do instead.
DataType dataTypeOf(dl::dtype t, const char* call, const char* name) {
  const auto code = static_cast<dl::dtype_code>(t.code);
  if (t.lanes == 1) {
    if (code == dl::dtype_code::Int && t.bits == 8) return DataType::kInt8;
    if (code == dl::dtype_code::Int && t.bits == 32) return DataType::kInt32;
    if (code == dl::dtype_code::Int && t.bits == 64) return DataType::kInt64;
    if (code == dl::dtype_code::UInt && t.bits == 8) return DataType::kUInt8;
    if (code == dl::dtype_code::UInt && t.bits == 32) return DataType::kUInt32;
    if (code == dl::dtype_code::UInt && t.bits == 64) return DataType::kUInt64;
    if (code == dl::dtype_code::Float && t.bits == 16) return DataType::kFloat16;
    if (code == dl::dtype_code::Float && t.bits == 32) return DataType::kFloat32;
    if (code == dl::dtype_code::Float && t.bits == 64) return DataType::kFloat64;
    if (code == dl::dtype_code::Bfloat && t.bits == 16) return DataType::kBFloat16;
  }
  std::string hint;
  if (code == dl::dtype_code::Bool)
    hint = "; reduce a uint8 view instead (x.view(np.uint8): max is logical or, min is logical and)";
  else if (code == dl::dtype_code::Complex)
    hint = "; for sum/avg reduce a real view instead (x.view(np.float32) or x.view(np.float64))";
  else if ((code == dl::dtype_code::Int || code == dl::dtype_code::UInt) && t.bits == 16)
    hint = "; ringsync has no 16-bit integer type: widen to int32";
  reject(call, name,
         "has dtype " + dtypeText(t) + ", which ringsync does not reduce (supported: " + supportedList() + ")" + hint);
}

// Elements must form one dense block in C order (dimensions of extent 1 may have any stride).
void checkContiguous(const nb::ndarray<>& a, const char* call, const char* name) {
  if (a.size() <= 1) return;
  std::int64_t expected = 1;
  bool dense = true;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) dense = false;
    expected *= a.shape(i);
  }
  if (dense) return;
  // std::to_string, not an ostringstream: on the lent H100 machine's image (GCC 13, numpy 2.5.2)
  // this message, formatted through an ostream, crashed inside libstdc++'s number formatting
  // (ostream::_M_insert<unsigned long>, linked into this module there); RESULTS 9.
  std::string shape, strides;
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    const char* separator = i ? ", " : "";
    shape += separator + std::to_string(a.shape(i));
    strides += separator + std::to_string(a.stride(i));
  }
  reject(call, name,
         "is not C-contiguous (shape=(" + shape + "), strides=(" + strides +
             ") elements); ringsync reduces one dense block in place: reduce a contiguous copy "
             "(np.ascontiguousarray) and copy the result back");
}

// Why `object` could not be imported as a writable array (only reached on the error path).
[[noreturn]] void explainImportFailure(nb::handle object, const char* call, const char* name) {
  const std::string typeName = nb::type_name(object.type()).c_str();
  nb::ndarray<nb::ro> readOnly;
  if (nb::try_cast(object, readOnly, false))
    reject(call, name, "is read-only (" + typeName + "); ringsync writes the result into it in place");
  if (nb::hasattr(object, "dtype")) {
    const std::string dtype = text(object.attr("dtype"));
    reject(call, name,
           "(" + typeName + ") has dtype " + dtype +
               ", which ringsync cannot reduce (supported, in "
               "native byte order through DLPack or the buffer protocol: " +
               supportedList() + ")");
  }
  reject(call, name,
         "must be a writable array exporting DLPack or the buffer protocol (numpy, torch, "
         "array.array, ...), got " +
             typeName);
}

// numpy has no bfloat16; ml_dtypes adds one that neither DLPack nor the buffer protocol exports.
// Its bits are reduced through a uint16 view of the same memory.
bool isMlDtypesBfloat16(nb::handle object) {
  if (!nb::hasattr(object, "dtype") || !nb::hasattr(object, "view")) return false;
  nb::object dtype = object.attr("dtype");
  return nb::hasattr(dtype, "name") && text(dtype.attr("name")) == "bfloat16";
}

// `bitsOf`: the array holds that type's bits under another dtype (bfloat16 as uint16).
ImportedArray fromNdarray(nb::ndarray<> a, const char* call, const char* name, std::optional<DataType> bitsOf = {}) {
  ImportedArray out;
  out.type = bitsOf ? *bitsOf : dataTypeOf(a.dtype(), call, name);
  const int device = a.device_type();
  if (device == nb::device::cuda::value || device == nb::device::cuda_managed::value) {
    if (!RINGSYNC_WITH_CUDA)
      reject(call, name,
             "is a CUDA tensor, but this ringsync was built without CUDA "
             "(rebuild: RINGSYNC_ENABLE_CUDA=ON pip install ./python_bindings)");
    out.onDevice = true;
  } else if (device != nb::device::cpu::value && device != nb::device::cuda_host::value) {
    reject(call, name,
           "lives on DLPack device type " + std::to_string(device) +
               "; ringsync takes host arrays and (CUDA builds) CUDA tensors");
  }
  checkContiguous(a, call, name);
  out.count = a.size();
  out.data = a.data();
  out.array = std::move(a);
  return out;
}

}  // namespace

ImportedArray importArray(nb::handle object, const char* call, const char* name) {
  BufferArray fast;
  if (importBuffer(object.ptr(), fast)) {
    ImportedArray out;
    out.buffer = std::move(fast.buffer);
    out.data = fast.data;
    out.count = fast.count;
    out.type = fast.type;
    return out;
  }
  // A torch tensor that requires grad is refused here: nanobind's import accepts it (torch's own
  // __dlpack__ would not), and an in-place write behind autograd's back corrupts gradients.
  if (nb::hasattr(object, "requires_grad") && nb::cast<bool>(object.attr("requires_grad")))
    reject(call, name, "requires grad; pass tensor.detach() (the same memory) instead");
  nb::ndarray<> array;
  if (nb::try_cast(object, array, false)) return fromNdarray(std::move(array), call, name);
  if (isMlDtypesBfloat16(object)) {
    nb::object bits = object.attr("view")("uint16");
    if (nb::try_cast(bits, array, false)) return fromNdarray(std::move(array), call, name, DataType::kBFloat16);
  }
  explainImportFailure(object, call, name);
}

CUstream_st* streamFor(const ImportedArray& array, nb::handle stream, const char* call) {
  if (!array.onDevice) return nullptr;
  if (stream.is_none())
    throw InvalidArgument(std::string(call) +
                          ": a CUDA tensor needs stream= (an int cudaStream_t, or an "
                          "object with .cuda_stream such as torch.cuda.current_stream())");
  nb::object value = nb::hasattr(stream, "cuda_stream") ? stream.attr("cuda_stream") : nb::borrow(stream);
  std::uintptr_t address = 0;
  if (!nb::try_cast(value, address))
    throw InvalidArgument(std::string(call) + ": stream=" + text(nb::repr(stream)) +
                          " is neither an int cudaStream_t nor an object with .cuda_stream");
  return reinterpret_cast<CUstream_st*>(address);
}

ReduceOp parseOp(const char* op, const char* call) {
  if (auto parsed = parseReduceOp(op)) return *parsed;
  throw InvalidArgument(std::string(call) + ": op='" + op + "' is not one of sum, prod, min, max, avg");
}

}  // namespace ringsync::python
