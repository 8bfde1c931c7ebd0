#include "scratch_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace ringsync::detail {
namespace {
constexpr std::size_t kPageBytes = 4096;
}

ScratchBuffer::~ScratchBuffer() { std::free(data_); }

ScratchBuffer::ScratchBuffer(ScratchBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void ScratchBuffer::reserve(std::size_t bytes) {
  if (bytes <= size_) return;
  const std::size_t rounded = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* memory = std::aligned_alloc(kPageBytes, rounded);
  if (!memory) throw std::bad_alloc();
  std::memset(memory, 0, rounded);  // pre-touch every page now, not inside a timed collective
  std::free(data_);
  data_ = static_cast<std::byte*>(memory);
  size_ = rounded;
}

}  // namespace ringsync::detail
