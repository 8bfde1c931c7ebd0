# ringsync::torch is built against libtorch when RINGSYNC_WITH_TORCH allows it and libtorch is found
# (the core library never depends on torch). ringsync_find_torch() runs find_package(Torch) in the
# calling directory, so that what torch's package config sets (its CUDA flags and architectures)
# stays out of the rest of the build, and sets there:
#   RINGSYNC_TORCH_FOUND      ON when ringsync::torch can be built
#   RINGSYNC_TORCH_WITH_CUDA  ON when CUDA tensors can travel (ringsync's and torch's CUDA builds)
#   RINGSYNC_TORCH_NCCL       the libnccl.so.2 torch brings, when libringsync links the toolkit's:
#                             linked ahead of libringsync (see below)
# Where libtorch is: Torch_DIR or CMAKE_PREFIX_PATH as for any libtorch program, else the torch of
# the Python interpreter ($PYTHON, python3), asked once (torch.utils.cmake_prefix_path).
# AUTO skips with a message what ON refuses with an error: no libtorch, a CUDA build of libtorch
# without a CUDA compiler (torch's config needs one), a different std::string ABI.

function(ringsync_torch_unavailable)
  string(JOIN "" reason ${ARGN})  # the reason, given in pieces
  if(RINGSYNC_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "ringsync::torch: RINGSYNC_WITH_TORCH=ON, but ${reason}")
  endif()
  message(STATUS "ringsync::torch: not built (${reason}; RINGSYNC_WITH_TORCH=OFF silences this)")
endfunction()

# The folder holding TorchConfig.cmake, or "" (cached once found).
function(ringsync_locate_torch_config out)
  if(Torch_DIR AND EXISTS "${Torch_DIR}/TorchConfig.cmake")
    set(${out} "${Torch_DIR}" PARENT_SCOPE)
    return()
  endif()
  set(prefixes ${CMAKE_PREFIX_PATH} $ENV{CMAKE_PREFIX_PATH})
  if(NOT RINGSYNC_TORCH_PYTHON_PREFIX)
    set(python "$ENV{PYTHON}")
    if(NOT python)
      find_program(RINGSYNC_TORCH_PYTHON NAMES python3 python)
      set(python "${RINGSYNC_TORCH_PYTHON}")
    endif()
    if(python)
      execute_process(COMMAND "${python}" -c "import torch; print(torch.utils.cmake_prefix_path)"
                      RESULT_VARIABLE status OUTPUT_VARIABLE prefix ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(status EQUAL 0 AND prefix)
        set(RINGSYNC_TORCH_PYTHON_PREFIX "${prefix}" CACHE PATH "libtorch's CMake prefix, from ${python}'s torch")
      endif()
    endif()
  endif()
  list(APPEND prefixes ${RINGSYNC_TORCH_PYTHON_PREFIX})
  foreach(prefix IN LISTS prefixes)
    foreach(suffix Torch share/cmake/Torch lib/cmake/Torch)
      if(EXISTS "${prefix}/${suffix}/TorchConfig.cmake")
        set(${out} "${prefix}/${suffix}" PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

macro(ringsync_find_torch)
  set(RINGSYNC_TORCH_FOUND OFF)
  set(RINGSYNC_TORCH_WITH_CUDA OFF)
  set(ringsync_torch_config_dir "")
  if(NOT ((RINGSYNC_SANITIZE OR RINGSYNC_TSAN) AND RINGSYNC_WITH_TORCH STREQUAL "AUTO"))
    ringsync_locate_torch_config(ringsync_torch_config_dir)
  endif()
  if((RINGSYNC_SANITIZE OR RINGSYNC_TSAN) AND RINGSYNC_WITH_TORCH STREQUAL "AUTO")
    # libtorch is not instrumented: its threads and allocations would only bring false reports.
    message(STATUS "ringsync::torch: not built in a sanitizer build (RINGSYNC_WITH_TORCH=ON builds it anyway)")
  elseif(NOT ringsync_torch_config_dir)
    ringsync_torch_unavailable("no libtorch found (set Torch_DIR or CMAKE_PREFIX_PATH to libtorch's "
                               "share/cmake, or install torch for python3)")
  else()
    get_filename_component(ringsync_torch_root "${ringsync_torch_config_dir}/../../.." ABSOLUTE)
    include(CheckLanguage)
    check_language(CUDA)
    if(EXISTS "${ringsync_torch_root}/lib/libtorch_cuda.so" AND NOT CMAKE_CUDA_COMPILER)
      ringsync_torch_unavailable("the libtorch in ${ringsync_torch_root} is a CUDA build, whose CMake package "
                                 "needs a CUDA compiler, and none was found")
    else()
      # torch's config rejects a CMAKE_CUDA_ARCHITECTURES it did not choose (a warning), and without
      # TORCH_CUDA_ARCH_LIST probes the GPU with a test program (an error where there is none).
      # Nothing here is CUDA code; ringsync's own choice stays in force outside this folder.
      unset(CMAKE_CUDA_ARCHITECTURES)
      if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
        set(TORCH_CUDA_ARCH_LIST "9.0")
      endif()
      set(Torch_DIR "${ringsync_torch_config_dir}" CACHE PATH "libtorch's CMake package" FORCE)
      find_package(Torch CONFIG QUIET)
      if(NOT Torch_FOUND)
        ringsync_torch_unavailable("find_package(Torch) failed in ${Torch_DIR}")
      elseif(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
        ringsync_torch_unavailable("this libtorch uses the old std::string ABI (_GLIBCXX_USE_CXX11_ABI=0), "
                                   "libringsync the new one")
      else()
        set(RINGSYNC_TORCH_FOUND ON)
        # torch's targets name each other in generator expressions that are evaluated where a
        # target links them (the tests, the bench): they must be visible there too.
        get_directory_property(ringsync_torch_imported IMPORTED_TARGETS)
        foreach(target IN LISTS ringsync_torch_imported)
          set_property(TARGET ${target} PROPERTY IMPORTED_GLOBAL TRUE)
        endforeach()
        if(RINGSYNC_WITH_CUDA AND TARGET c10_cuda)
          set(RINGSYNC_TORCH_WITH_CUDA ON)
        endif()
        # One libnccl.so.2 per process, and it must be torch's: PyPI's torch brings a newer NCCL
        # (the nvidia-nccl-cu* wheel) than the toolkit's that libringsync links, and libtorch_cuda
        # needs its newer functions. Linked ahead of libringsync, it is the one the program loads
        # and links against; NCCL keeps its ABI within major version 2, so ringsync runs on it.
        set(RINGSYNC_TORCH_NCCL "")
        if(RINGSYNC_WITH_CUDA)
          foreach(candidate "${ringsync_torch_root}/../nvidia/nccl/lib/libnccl.so.2"
                            "${ringsync_torch_root}/lib/libnccl.so.2")
            if(NOT RINGSYNC_TORCH_NCCL AND EXISTS "${candidate}")
              get_filename_component(RINGSYNC_TORCH_NCCL "${candidate}" ABSOLUTE)
            endif()
          endforeach()
        endif()
        message(STATUS "ringsync::torch: building against libtorch ${Torch_VERSION} in ${ringsync_torch_root} "
                       "(CUDA tensors: ${RINGSYNC_TORCH_WITH_CUDA})")
      endif()
    endif()
  endif()
endmacro()
