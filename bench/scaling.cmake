# scaling_perf: ringsync-train at 1, 2 and 4 ranks with a fixed per-rank batch (weak scaling) and a
# fixed global batch (strong scaling); samples/s and efficiency as a table and a PNG. A Python
# script: it only launches the trainer and reads its --json reports. Copied next to ringsync-train
# (build/bin), where it finds the trainer by default.
if(NOT TARGET ringsync-train)
  return()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/scaling_perf ${PROJECT_BINARY_DIR}/bin/scaling_perf COPYONLY)

# Label `bench`: one quick synthetic sweep (np 1 2 4, both modes, PNG included), so the script and
# its plot are tested; the figures are not (speed is never asserted).
if(RINGSYNC_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    add_test(NAME bench_scaling_perf_quick
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_BINARY_DIR}/bin/scaling_perf --quick
              --trainer $<TARGET_FILE:ringsync-train> --mpirun ${MPIEXEC_EXECUTABLE} --timeout 50
              --png ${CMAKE_CURRENT_BINARY_DIR}/scaling_quick.png)
    set_tests_properties(bench_scaling_perf_quick PROPERTIES TIMEOUT 120 LABELS "mpi;bench;trainer" PROCESSORS 2
      PASS_REGULAR_EXPRESSION "strong +4 +512 +128\\.0 .*# plot: "
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_pml=ob1;RINGSYNC_TIMEOUT_SECONDS=60")
  endif()
endif()
