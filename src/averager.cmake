# GradientAverager: tensor fusion into buckets, overlapped with backward (issue 5).
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_checks.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_host.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_impl.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_progress.cc)

# Device gradients need the batched pack kernels (cuda/pack_kernels.h, built by cuda/kernels.cmake).
# Until those exist, or without CUDA, every gradient is treated as host memory.
if(RINGSYNC_WITH_CUDA AND EXISTS ${PROJECT_SOURCE_DIR}/cuda/kernels.cmake)
  target_sources(ringsync PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_device_cuda.cc)
  target_link_libraries(ringsync PRIVATE CUDA::cudart)
else()
  target_sources(ringsync PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_device_none.cc)
endif()
