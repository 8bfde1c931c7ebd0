# The trainer's kernels (bias + ReLU, ReLU backward, softmax cross-entropy, SGD), a static library
# of their own: linked by ringsync-train's GPU engine only, never part of libringsync.
add_library(ringsync_trainer_kernels STATIC ${CMAKE_CURRENT_LIST_DIR}/trainer_kernels.cu)
target_include_directories(ringsync_trainer_kernels
  PUBLIC ${PROJECT_SOURCE_DIR}
  PRIVATE ${PROJECT_SOURCE_DIR}/include)   # ringsync/errors.h (BackendError)
target_link_libraries(ringsync_trainer_kernels PUBLIC CUDA::cudart PRIVATE ringsync_warnings)
