# Gradient fusion: bucket planning and the host pack/unpack (used by src/gradient_averager*).
target_sources(ringsync PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/bucket_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/fusion_pack.cc)
