# GPU-only bench binaries (built when RINGSYNC_WITH_CUDA; run by scripts/gpu_verify.sh on a GPU
# machine). They measure internals (kernel bandwidth, NCCL-path overhead), so unlike the other
# bench binaries they include internal headers (cuda/...).
if(NOT RINGSYNC_WITH_CUDA)
  return()
endif()
foreach(tool gpu_kernel_bench gpu_nccl_overhead)
  add_executable(${tool} ${CMAKE_CURRENT_LIST_DIR}/${tool}.cu)
  target_include_directories(${tool} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${tool} PRIVATE ringsync ringsync_perf_harness CLI11::CLI11 CUDA::cudart ringsync_nccl
                        ringsync_warnings)
  set_target_properties(${tool} PROPERTIES CUDA_RUNTIME_LIBRARY Shared RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endforeach()
# The staged path's CUDA steps alone, in several processes sharing one GPU (plain MPI, no ringsync call).
add_executable(gpu_staging_latency ${CMAKE_CURRENT_LIST_DIR}/gpu_staging_latency.cu)
target_include_directories(gpu_staging_latency PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(gpu_staging_latency PRIVATE ringsync_perf_harness CLI11::CLI11 CUDA::cudart MPI::MPI_CXX ringsync_warnings)
set_target_properties(gpu_staging_latency PROPERTIES CUDA_RUNTIME_LIBRARY Shared RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
