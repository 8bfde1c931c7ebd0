# allreduce_perf, reducescatter_perf, allgather_perf and broadcast_perf (nccl-tests style), one small file per collective over one
# shared harness (perf_*.cc). They use ringsync's public headers (and, for the MPI baseline, the
# library's MPI all-reduce, collectives/mpi_allreduce.h), and check their results
# against the closed forms the tests use (ringsync_closed_form, tests/support/closed_form/).
find_package(CLI11 REQUIRED CONFIG)

add_library(ringsync_perf_harness STATIC
  ${CMAKE_CURRENT_LIST_DIR}/perf_args.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_buffers.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_device.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_harness.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_mpi.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_report.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_pattern.cc)
target_link_libraries(ringsync_perf_harness PUBLIC ringsync ringsync_closed_form
                      PRIVATE CLI11::CLI11 nlohmann_json::nlohmann_json ringsync_warnings)
# The MPI baseline is the library's MPI all-reduce without a deadline (collectives/mpi_allreduce.h):
# its float16/bfloat16 ops round with the library's own kernels.
target_include_directories(ringsync_perf_harness PRIVATE ${PROJECT_SOURCE_DIR})
if(RINGSYNC_WITH_CUDA)
  # Device buffers and CUDA events for --backend nccl|staged: the runtime only, never the driver stub.
  target_link_libraries(ringsync_perf_harness PRIVATE CUDA::cudart)
endif()

foreach(tool allreduce_perf broadcast_perf reducescatter_perf allgather_perf)
  add_executable(${tool} ${CMAKE_CURRENT_LIST_DIR}/${tool}.cc)
  target_link_libraries(${tool} PRIVATE ringsync_perf_harness ringsync_warnings)
  set_target_properties(${tool} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endforeach()

# The `bench` label: a short checked sweep at 2 ranks, so the binaries themselves are tested (the
# figures are not: speed is never asserted). tests/ sets its environment list in its own scope,
# so the same settings are spelled out here.
if(RINGSYNC_BUILD_TESTS)
  set(RINGSYNC_PERF_TEST_ENV
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_pml=ob1 RINGSYNC_TIMEOUT_SECONDS=60 MPIEXEC_TIMEOUT=120)
  function(ringsync_add_perf_test name tool)
    add_test(NAME ${name}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${tool}>
              ${MPIEXEC_POSTFLAGS} ${ARGN})
    set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS "mpi;bench" PROCESSORS 2
      ENVIRONMENT "${RINGSYNC_PERF_TEST_ENV}"
      FAIL_REGULAR_EXPRESSION "FAILED")
  endfunction()
  # Every size from the direct path through several ring segments, both forms, checked.
  ringsync_add_perf_test(bench_allreduce_float_sum.np2 allreduce_perf
    -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 --compare mpi)
  ringsync_add_perf_test(bench_allreduce_half_avg.np2 allreduce_perf
    -b 4 -e 1M -f 16 -n 2 -w 1 -c 1 -d half -o avg --compare mpi)
  ringsync_add_perf_test(bench_allreduce_int8_max_mpi.np2 allreduce_perf
    -b 1 -e 64K -f 16 -n 2 -w 1 -c 1 -d int8 -o max --backend mpi)
  ringsync_add_perf_test(bench_allreduce_nocheck.np2 allreduce_perf
    -b 8 -e 1M -f 64 -n 2 -w 1 -c 1 --compare nocheck)
  # Calls in turn on separately allocated buffers: every set checked, in place and out of place.
  ringsync_add_perf_test(bench_allreduce_buffers.np2 allreduce_perf
    -b 8 -e 2M -f 32 -n 4 -w 1 -c 1 --buffers 3 --compare mpi)
  ringsync_add_perf_test(bench_broadcast_root1.np2 broadcast_perf
    -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 -r 1 --compare mpi)
  ringsync_add_perf_test(bench_reducescatter_float_avg.np2 reducescatter_perf
    -b 8 -e 16M -f 8 -n 3 -w 1 -c 1 -o avg --compare mpi)
  ringsync_add_perf_test(bench_allgather_int8.np2 allgather_perf
    -b 8 -e 16M -f 8 -n 3 -w 1 -c 1 -d int8 --compare mpi)
  # --json read back by its consumer (median_table.py). The file's name ends in a byte that is not
  # UTF-8: it is in the "command" field, which must still be written (as U+FFFD) and parse.
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    add_test(NAME bench_allreduce_json.np2
      COMMAND bash -c [[json="$3/bench_json_"$'\xe9'.json && rm -f "$json" &&
                        "$1" -np 2 "$2" -b 8 -e 32K -f 64 -n 2 -w 1 -c 1 --compare mpi --json "$json" >/dev/null &&
                        "$4" "$5" "$json" "$json"]]
              _ ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:allreduce_perf> ${CMAKE_CURRENT_BINARY_DIR} ${Python3_EXECUTABLE}
              ${CMAKE_CURRENT_LIST_DIR}/median_table.py)
    set_tests_properties(bench_allreduce_json.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;bench" PROCESSORS 2
      ENVIRONMENT "${RINGSYNC_PERF_TEST_ENV}" PASS_REGULAR_EXPRESSION "\\| 32 KiB \\|")
  endif()
  # The multi-host bench, short: 2 simulated hosts x 2 ranks with a capped link, each host on
  # cores of its own, one launch each with Open MPI's default and HAN, values checked (skips where
  # namespaces are refused).
  add_test(NAME bench_multihost_quick.np4
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/multihost.sh --hosts 2 --ranks 2 --rate 2gbit --launches 1 --pin-hosts
            --build ${PROJECT_BINARY_DIR} --limit 60 --sizes "-b 8 -e 1M -f 32 -n 3 -w 1")
  set_tests_properties(bench_multihost_quick.np4 PROPERTIES TIMEOUT 150 LABELS "mpi;bench;netns" PROCESSORS 4
    SKIP_RETURN_CODE 77 ENVIRONMENT "${RINGSYNC_PERF_TEST_ENV}")
endif()

# The memory-traffic bound the host ring is measured against (RESULTS.md).
add_executable(copy_bandwidth ${CMAKE_CURRENT_LIST_DIR}/copy_bandwidth.cc)
target_link_libraries(copy_bandwidth PRIVATE ringsync_perf_harness MPI::MPI_CXX CLI11::CLI11 ringsync_warnings)
set_target_properties(copy_bandwidth PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The per-call cost of RINGSYNC_TIMELINE (two communicators in one process, alternating blocks).
add_executable(timeline_overhead ${CMAKE_CURRENT_LIST_DIR}/timeline_overhead.cc)
target_link_libraries(timeline_overhead PRIVATE ringsync ringsync_warnings)
set_target_properties(timeline_overhead PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The all-reduce split by where node-local ranks 0 and 1 sit (a shared cache or not), in one launch.
add_executable(peer_cache_perf ${CMAKE_CURRENT_LIST_DIR}/peer_cache_perf.cc)
target_link_libraries(peer_cache_perf PRIVATE ringsync MPI::MPI_CXX CLI11::CLI11 ringsync_warnings)
set_target_properties(peer_cache_perf PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
add_test(NAME bench_peer_cache_perf.np2
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS} $<TARGET_FILE:peer_cache_perf>
          ${MPIEXEC_POSTFLAGS} --iters 40)
set_tests_properties(bench_peer_cache_perf.np2 PROPERTIES TIMEOUT 60 LABELS "mpi;bench" PROCESSORS 2
  ENVIRONMENT "${RINGSYNC_PERF_TEST_ENV}")
