# fusion_perf: ResNet-50's gradients averaged per tensor, fused, and fused + overlapped; with
# --shard also sharded (reduce-scatter, shard update, all-gather).
# Public headers only, plus the bench harness's host/device memory and streams (perf.cmake).
find_package(CLI11 REQUIRED CONFIG)
add_executable(fusion_perf ${CMAKE_CURRENT_LIST_DIR}/fusion_perf.cc ${CMAKE_CURRENT_LIST_DIR}/fusion_shard.cc
               ${CMAKE_CURRENT_LIST_DIR}/resnet50_model.cc)
target_link_libraries(fusion_perf PRIVATE ringsync_perf_harness CLI11::CLI11 ringsync_warnings)
target_include_directories(fusion_perf PRIVATE ${CMAKE_CURRENT_LIST_DIR})
set_target_properties(fusion_perf PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# Label `bench`: one short checked run at 2 ranks, so the binary itself is tested (its figures
# are not: speed is never asserted; a wrong value makes it exit non-zero).
if(RINGSYNC_BUILD_TESTS)
  add_test(NAME bench_fusion_perf.np2
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS} $<TARGET_FILE:fusion_perf>
            ${MPIEXEC_POSTFLAGS} -w 0 -n 1 --bucket-mib 4 --first-bucket-mib 1)
  set_tests_properties(bench_fusion_perf.np2 PROPERTIES TIMEOUT 120 LABELS "mpi;bench;fusion" PROCESSORS 2
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_pml=ob1;RINGSYNC_TIMEOUT_SECONDS=60;MPIEXEC_TIMEOUT=120")
  # --shard at 3 ranks (blocks that need padding), ResNet-50 scaled down 16x: every value checked.
  add_test(NAME bench_fusion_perf_shard.np3
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${MPIEXEC_PREFLAGS} $<TARGET_FILE:fusion_perf>
            ${MPIEXEC_POSTFLAGS} -w 0 -n 1 --shard --scale-down 16 --bucket-mib 1 --first-bucket-mib 0.25)
  set_tests_properties(bench_fusion_perf_shard.np3 PROPERTIES TIMEOUT 120 LABELS "mpi;bench;fusion" PROCESSORS 3
    PASS_REGULAR_EXPRESSION "shard_overlap .*per rank" FAIL_REGULAR_EXPRESSION "FAILED"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_pml=ob1;RINGSYNC_TIMEOUT_SECONDS=60;MPIEXEC_TIMEOUT=120")
endif()
