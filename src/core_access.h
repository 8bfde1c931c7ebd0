// How the library's own layers above the core (the GradientAverager) reach a Communicator's core
// for what is not public API (a Call over a ScatteredBuffer, run by Communicator::Impl::run).
#pragma once

#include "communicator_impl.h"

namespace ringsync::detail {

class CoreAccess {
 public:
  static Communicator::Impl& of(Communicator& comm) { return *comm.impl_; }
};

}  // namespace ringsync::detail
