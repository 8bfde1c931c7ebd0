#include "collective_kinds.h"

#include <string>

#include "ringsync/errors.h"

namespace ringsync::detail {

void throwNotACollective(CollectiveKind kind) {
  throw InvalidArgument("kind=" + std::to_string(static_cast<int>(kind)) + " is not a collective");
}

}  // namespace ringsync::detail
