// One NCCL communicator at a time on a GPU. NCCL's rule for several communicators on one device:
// use them in separate epochs, each finished before the next starts, because NCCL kernels block
// until their peers join and two of them can wait on each other across ranks. A GradientAverager
// drives a communicator of its own (a duplicate: its own NCCL communicator) from its progress
// thread, at moments that differ from rank to rank, so no host order can make concurrent use safe.
// ringsync therefore serialises: from an averager's first markReady of a step with device buckets
// until its synchronize() returns, device collectives on any other Communicator of the process
// raise InvalidArgument (the same on every rank: it follows the program's order, not timing).
#pragma once

namespace ringsync::detail {

class DeviceEpochs {
 public:
  static void averagerStepBegins() noexcept;
  static void averagerStepEnds() noexcept;
  static int averagerStepsInFlight() noexcept;
};

}  // namespace ringsync::detail
