# The layers (README.md, "Layout"), enforced by the build: each layer is its own object-library target and
# compiles against a root in the build tree that holds links to the layers SEES it only (plus the
# public headers), so an upward include -- "src/..." from collectives/ or cuda/, the trainer from the
# library -- fails to compile ("No such file or directory"). A layer includes its own headers by
# their plain name (same folder) and lower layers as "collectives/x.h", "cuda/x.h", "src/x.h".
#
#   ringsync_layer(<target> [SEES <layer>...])   <layer>: cuda | collectives | src (its own folder too, for
#   "cuda/x.h"-style includes within a layer)
# `src` links the core's headers only (src/*.h), never src/trainer or src/averager.
function(ringsync_layer target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SEES")
  set(root ${PROJECT_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(layer IN LISTS arg_SEES)
    if(layer STREQUAL "src")
      file(MAKE_DIRECTORY ${root}/src)
      file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.h)
      foreach(header IN LISTS headers)
        get_filename_component(name ${header} NAME)
        file(CREATE_LINK ${header} ${root}/src/${name} SYMBOLIC)
      endforeach()
    else()
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${layer} ${root}/${layer} SYMBOLIC)
    endif()
  endforeach()
  target_include_directories(${target} PRIVATE ${root} ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  target_link_libraries(${target} PRIVATE MPI::MPI_CXX Threads::Threads ringsync_warnings)
  # Their objects go into the one libringsync (a shared library: position-independent code).
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Calls inside the library may bind to its own functions directly, inlined or not (the link adds
  # -Bsymbolic-functions): nobody interposes ringsync's functions. Measured on an 8-byte
  # all-reduce: 0.13 -> 0.12 us at np=1, 0.24 -> 0.22-0.23 us at np=2 (5 interleaved launches);
  # 0.62 -> 0.54 us from Python, whose package links the library as a shared one too.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
  target_sources(ringsync PRIVATE $<TARGET_OBJECTS:${target}>)
endfunction()
