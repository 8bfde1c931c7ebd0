# The device-buffer algorithms: the NCCL path (MPI-bootstrapped communicator) and the staged path
# (device -> pinned host -> host ring -> device). Included by collectives/CMakeLists.txt only when
# RINGSYNC_WITH_CUDA. staged_path.cc itself has no CUDA in it (tests compile it without CUDA too).
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/nccl_bootstrap.cc
  ${CMAKE_CURRENT_LIST_DIR}/nccl_communicator.cc
  ${CMAKE_CURRENT_LIST_DIR}/staged_cuda.cc
  ${CMAKE_CURRENT_LIST_DIR}/staged_path.cc)
target_link_libraries(ringsync PRIVATE CUDA::cudart ringsync_nccl)
