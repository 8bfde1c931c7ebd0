#include "buffer_import.h"

#include <cstdint>
#include <optional>

namespace ringsync::python {
namespace {

bool littleEndianHost() {
  const std::uint16_t probe = 1;
  return *reinterpret_cast<const unsigned char*>(&probe) == 1;
}

// struct-module format of one native-order element -> ringsync type; nullopt for anything else
// (int16, bool, complex, long double, big-endian, records, ...), which DLPack then explains.
std::optional<DataType> typeOfFormat(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return itemsize == 1 ? std::optional(DataType::kUInt8) : std::nullopt;  // plain bytes
  if (*format == '@' || *format == '=' || (*format == '<' && littleEndianHost())) ++format;
  if (format[0] == '\0' || format[1] != '\0') return std::nullopt;
  switch (format[0]) {
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      if (itemsize == 1) return DataType::kInt8;
      if (itemsize == 4) return DataType::kInt32;
      if (itemsize == 8) return DataType::kInt64;
      return std::nullopt;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      if (itemsize == 1) return DataType::kUInt8;
      if (itemsize == 4) return DataType::kUInt32;
      if (itemsize == 8) return DataType::kUInt64;
      return std::nullopt;
    case 'e': return itemsize == 2 ? std::optional(DataType::kFloat16) : std::nullopt;
    case 'f': return itemsize == 4 ? std::optional(DataType::kFloat32) : std::nullopt;
    case 'd': return itemsize == 8 ? std::optional(DataType::kFloat64) : std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace

bool importBuffer(PyObject* object, BufferArray& out) noexcept {
  if (!PyObject_CheckBuffer(object)) return false;
  HeldBuffer view(new Py_buffer{});
  if (PyObject_GetBuffer(object, view.get(), PyBUF_RECORDS) != 0) {  // writable, strides, format
    PyErr_Clear();
    delete view.release();  // the export failed: nothing to PyBuffer_Release
    return false;
  }
  const std::optional<DataType> type = typeOfFormat(view->format, view->itemsize);
  if (!type || view->itemsize <= 0 || !PyBuffer_IsContiguous(view.get(), 'C')) return false;
  out.data = view->buf;
  out.count = static_cast<std::size_t>(view->len / view->itemsize);
  out.type = *type;
  out.buffer = std::move(view);
  return true;
}

}  // namespace ringsync::python
