#include "collective_kinds.h"

#include <string>

#include "ringsync/errors.h"

namespace ringsync::detail {

const CollectiveTraits& traitsOf(CollectiveKind kind) {
  const CollectiveTraits* row = findCollective(kind);
  if (row == nullptr) throw InvalidArgument("kind=" + std::to_string(static_cast<int>(kind)) + " is not a collective");
  return *row;
}

}  // namespace ringsync::detail
