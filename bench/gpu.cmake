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
