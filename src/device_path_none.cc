// The device path of a build without CUDA: every pointer is host memory, so device routes are
// never chosen; the stream overloads with a stream raise BackendError before reaching here.
#include "device_path.h"

#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

class NoDevicePath final : public DevicePath {
 public:
  bool ncclDecided() const override { return true; }
  void decideNccl(Deadline&) override {}
  bool ncclUsable(std::string* whyNot) const override {
    if (whyNot) *whyNot = "ringsync was built without CUDA/NCCL";
    return false;
  }
  int device() const override { return -1; }
  void ncclRun(const Call&, Deadline&) override { unavailable(); }
  StagingMemory& staging() override { unavailable(); }
  void abort() noexcept override {}

 private:
  [[noreturn]] static void unavailable() {
    throw BackendError("device buffers need a ringsync built with CUDA and NCCL");
  }
};

}  // namespace

MemoryKind classifyPointer(const void*) { return MemoryKind::kHost; }
PointerPlace describePointer(const void*) { return {MemoryKind::kHost, -1}; }

std::unique_ptr<DevicePath> makeDevicePath(const DevicePathContext&) { return std::make_unique<NoDevicePath>(); }

}  // namespace ringsync::detail
