// Helpers for the device-path tests: whether this rank (and every rank) has a GPU, and the
// "SKIPPED: no CUDA device" rule for tests labelled `gpu` on machines without one.
#pragma once

#include <cstdio>

#include "support/test_support.h"

namespace ringsync::test {

// CUDA devices this process sees (0 when cudaGetDeviceCount fails, as it does without a driver).
int cudaDevices();

// True on every rank iff every rank sees a CUDA device; then each rank's current device is its
// node-local rank modulo the devices it sees (ranks share one GPU when there are fewer GPUs).
bool everyRankHasGpu();

}  // namespace ringsync::test

// First statement of every GPU test case: with no device anywhere it says so and passes.
#define RINGSYNC_GPU_TEST_OR_SKIP()               \
  do {                                            \
    if (!::ringsync::test::everyRankHasGpu()) {   \
      if (::ringsync::test::worldRank() == 0) {   \
        std::printf("SKIPPED: no CUDA device\n"); \
        std::fflush(stdout);                      \
      }                                           \
      WARN("SKIPPED: no CUDA device");            \
      return;                                     \
    }                                             \
  } while (0)
