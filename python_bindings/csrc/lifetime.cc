#include "lifetime.h"

#include <algorithm>
#include <vector>

namespace ringsync::python {
namespace {
// Touched only with the GIL held (construction, destruction and finalize all run under it).
std::vector<MpiResource*>& registry() {
  static std::vector<MpiResource*> objects;
  return objects;
}
}  // namespace

MpiResource::MpiResource() { registry().push_back(this); }

MpiResource::~MpiResource() {
  auto& objects = registry();
  objects.erase(std::remove(objects.begin(), objects.end(), this), objects.end());
}

void releaseAllMpiResources() noexcept {
  // Copy: releasing one object must not invalidate the iteration.
  const std::vector<MpiResource*> objects = registry();
  for (auto it = objects.rbegin(); it != objects.rend(); ++it) (*it)->releaseMpi();
}

}  // namespace ringsync::python
