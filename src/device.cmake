# The device path of a CUDA build (src/device_path.h): pointer classification, the lazily
# bootstrapped NCCL communicator, the staged path. Included by src/CMakeLists.txt only when
# RINGSYNC_WITH_CUDA; otherwise device_path_none.cc is built instead.
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/device_path_cuda.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_probe.cc)
target_link_libraries(ringsync PRIVATE CUDA::cudart ringsync_nccl)
