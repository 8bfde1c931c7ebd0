// The GPU engine (cuBLAS for the matrix products, the trainer's kernels.h for the rest), built
// only with CUDA and linked only into ringsync-train. Parameters, momentum and gradients live in
// device memory; the gradient averager reduces them there (NCCL, or staged through the host).
#pragma once

#include "compute.h"

namespace ringsync::trainer {

// makeEngine: the GPU engine on `device` (the communicator's, Communicator::cudaDevice()).
GpuHooks gpuHooks();

}  // namespace ringsync::trainer
