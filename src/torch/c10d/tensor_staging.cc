#include "tensor_staging.h"

#include <ATen/ATen.h>

#include <utility>

#include "torch_types.h"

namespace ringsync::torch_backend {

StagedTensor::StagedTensor(at::Tensor tensor, bool copyIn) : tensor_(std::move(tensor)) {
  if (tensor_.is_contiguous()) {
    dense_ = tensor_;
  } else if (copyIn) {
    dense_ = tensor_.contiguous();
  } else {
    dense_ = at::empty_like(tensor_, at::MemoryFormat::Contiguous);
  }
}

void* StagedTensor::data() const { return dense_.data_ptr(); }

std::size_t StagedTensor::count() const {
  return static_cast<std::size_t>(dense_.numel()) * wireFormat(dense_.scalar_type()).valuesPerElement;
}

DataType StagedTensor::wireType() const { return wireFormat(dense_.scalar_type()).type; }

void StagedTensor::finish() const {
  if (!dense_.is_same(tensor_)) tensor_.copy_(dense_);
}

}  // namespace ringsync::torch_backend
