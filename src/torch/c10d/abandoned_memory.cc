#include "abandoned_memory.h"

#include <mutex>
#include <utility>
#include <vector>

namespace ringsync::torch_backend {

void keepUntilExit(std::shared_ptr<const void> holder) {
  static std::mutex* mutex = new std::mutex();  // never destroyed: nothing here is ever freed
  static auto* kept = new std::vector<std::shared_ptr<const void>>();
  std::lock_guard<std::mutex> lock(*mutex);
  kept->push_back(std::move(holder));
}

}  // namespace ringsync::torch_backend
