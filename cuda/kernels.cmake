# The library's CUDA kernels (reduce / divide / scale, batched pack-unpack), compiled into
# libringsync. Included by cuda/CMakeLists.txt only when RINGSYNC_WITH_CUDA.
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/elementwise_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/pack_kernels.cu)
# One CUDA runtime per process: the shared libcudart that NCCL and the caller use too (CMake's
# default for CUDA sources is the static runtime, which would be a second, separate copy).
set_target_properties(ringsync PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
target_link_libraries(ringsync PRIVATE CUDA::cudart)
