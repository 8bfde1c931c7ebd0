# GradientAverager: tensor fusion into buckets, overlapped with backward (issue 5).
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_checks.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_host.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_impl.cc
  ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_progress.cc)

# Device gradients (CUDA builds): batched pack kernels from cuda/, GPU probe from src/device_probe.cc.
# Without CUDA every gradient is host memory.
if(RINGSYNC_WITH_CUDA)
  target_sources(ringsync PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_device_cuda.cc)
  target_link_libraries(ringsync PRIVATE CUDA::cudart)
else()
  target_sources(ringsync PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gradient_averager_device_none.cc)
endif()
