// Turning a Python array (DLPack or buffer protocol: numpy, torch, array.array, ...) into the
// pointer, element count and ringsync::DataType a collective needs, with every check done before
// anything is sent: writable, C-contiguous, a supported dtype, a supported device.
#pragma once

#include <cstddef>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "buffer_import.h"
#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::python {

namespace nb = nanobind;

// An imported array. Holding it keeps the exporter's memory alive, also while the GIL is released;
// destroy it with the GIL held.
struct ImportedArray {
  HeldBuffer buffer;    // the buffer-protocol fast path, or
  nb::ndarray<> array;  // DLPack (or nanobind's own buffer-protocol import)
  void* data = nullptr;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  bool onDevice = false;  // a CUDA tensor (only accepted by builds with CUDA)
};

// `call` and `name` ("allreduce", "x") label the InvalidArgument raised for an unusable object.
ImportedArray importArray(nb::handle object, const char* call, const char* name);

// stream=None -> nullptr; an int (cudaStream_t value) or an object with a `cuda_stream` attribute
// (torch.cuda.Stream) -> that stream. A CUDA tensor requires one; host arrays ignore it.
CUstream_st* streamFor(const ImportedArray& array, nb::handle stream, const char* call);

ReduceOp parseOp(const char* op, const char* call);

}  // namespace ringsync::python
