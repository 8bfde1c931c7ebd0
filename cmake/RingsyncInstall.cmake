# cmake --install: headers, the library, the CMake package `ringsync` (target ringsync::ringsync)
# and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS ringsync EXPORT ringsyncTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# <ringsync/torch.h> and <ringsync/torch_c10d.h> only with the library they declare.
if(RINGSYNC_TORCH_BUILT)
  set(ringsync_torch_header_rule "")
  set(RINGSYNC_TORCH_BUILT_01 1)
else()
  set(ringsync_torch_header_rule PATTERN "torch.h" EXCLUDE PATTERN "torch_c10d.h" EXCLUDE)
  set(RINGSYNC_TORCH_BUILT_01 0)
endif()
install(DIRECTORY include/ringsync DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
        ${ringsync_torch_header_rule})
install(FILES ${PROJECT_BINARY_DIR}/include/ringsync/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringsync)

set(RINGSYNC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ringsync)
install(EXPORT ringsyncTargets NAMESPACE ringsync:: DESTINATION ${RINGSYNC_CMAKE_DIR})
# The component `torch` (ringsync::torch), in a file of its own: only find_package(ringsync
# COMPONENTS torch) loads it, and with it libtorch's package (the one it was built against).
if(RINGSYNC_TORCH_BUILT)
  install(TARGETS ringsync_torch EXPORT ringsyncTorchTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT ringsyncTorchTargets NAMESPACE ringsync:: DESTINATION ${RINGSYNC_CMAKE_DIR})
endif()
configure_package_config_file(cmake/ringsyncConfig.cmake.in ${PROJECT_BINARY_DIR}/ringsyncConfig.cmake
  INSTALL_DESTINATION ${RINGSYNC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ringsyncConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ringsyncConfig.cmake ${PROJECT_BINARY_DIR}/ringsyncConfigVersion.cmake
  DESTINATION ${RINGSYNC_CMAKE_DIR})

file(RELATIVE_PATH RINGSYNC_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/ringsync.pc.in ${PROJECT_BINARY_DIR}/ringsync.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ringsync.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
