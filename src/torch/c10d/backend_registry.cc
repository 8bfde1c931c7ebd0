#include "backend_registry.h"

#include <mutex>
#include <vector>

#include "ringsync_backend.h"

namespace ringsync::torch_backend {
namespace {

class Registry {
 public:
  void add(const c10::intrusive_ptr<RingsyncBackend>& backend) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(backends_, [](const auto& weak) { return weak.expired(); });
    backends_.emplace_back(backend);
  }
  void shutdownAll() {
    std::vector<c10::weak_intrusive_ptr<RingsyncBackend>> backends;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      backends.swap(backends_);
    }
    for (auto& weak : backends)
      if (auto backend = weak.lock()) backend->shutdown();
  }

 private:
  std::mutex mutex_;
  std::vector<c10::weak_intrusive_ptr<RingsyncBackend>> backends_;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: backends may outlive static teardown
  return *instance;
}

}  // namespace

void registerBackend(const c10::intrusive_ptr<RingsyncBackend>& backend) { registry().add(backend); }

void shutdownRegisteredBackends() { registry().shutdownAll(); }

}  // namespace ringsync::torch_backend
