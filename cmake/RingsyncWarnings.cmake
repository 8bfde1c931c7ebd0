# Warnings on for our own targets only (not for Catch2, nanobind or CUDA headers).
add_library(ringsync_warnings INTERFACE)
target_compile_options(ringsync_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wpedantic>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
