# Building against a prefix of unpacked Debian 12 packages (SHEFL_PREFIX)
# instead of the system's: a GPU machine without apt (or root) gets
# gRPC, protobuf, abseil, prometheus-cpp and the rest from
# scripts/gpu-build.sh. Included by the top-level CMakeLists.txt before any
# find_package(); the pitfalls are the ones in docs/GPU.md.

set(_shefl_usr "${SHEFL_PREFIX}/usr")
set(_shefl_lib "${_shefl_usr}/lib/x86_64-linux-gnu")
if(NOT EXISTS "${_shefl_lib}/libgrpc++.so")
  message(FATAL_ERROR "SHEFL_PREFIX=${SHEFL_PREFIX} holds no usr/lib/x86_64-linux-gnu/"
    "libgrpc++.so: run scripts/gpu-build.sh pack on Debian 12 first")
endif()
message(STATUS "shefl: building against the Debian prefix ${SHEFL_PREFIX}")

# Every find_package / find_library / find_program looks in the prefix
# before the system (Catch2, benchmark, yaml-cpp, nlohmann_json, absl, gRPC
# and protobuf all resolve from there).
list(PREPEND CMAKE_PREFIX_PATH "${_shefl_usr}")
set(OPENSSL_ROOT_DIR "${_shefl_usr}")
set(ZLIB_ROOT "${_shefl_usr}")
set(Protobuf_ROOT "${_shefl_usr}")

# The prefix's headers first: the pip torch wheel may ship older protobuf
# headers under torch/include/google, and Debian's 3.21 must win. CMake turns
# this into -isystem (imported targets name the same folder), but as the
# first include folder of every target it is still searched before torch's.
include_directories(BEFORE "${_shefl_usr}/include")

# DT_RPATH, not DT_RUNPATH: an RPATH also applies to the libraries our
# libraries load (libgrpc -> libre2, libcares, libabsl_*), so all of them come
# from the prefix rather than whatever the machine has in /usr.
add_link_options("LINKER:--disable-new-dtags")
list(APPEND CMAKE_BUILD_RPATH "${_shefl_lib}")

# gRPC's Findre2 asks pkg-config, whose .pc files hard-code /usr.
if(NOT TARGET re2::re2)
  add_library(re2::re2 SHARED IMPORTED)
  set_target_properties(re2::re2 PROPERTIES
    IMPORTED_LOCATION "${_shefl_lib}/libre2.so.9"
    INTERFACE_INCLUDE_DIRECTORIES "${_shefl_usr}/include")
endif()
set(re2_FOUND TRUE)

# prometheus-cpp's config wants CURL and the push library, which the prefix
# leaves out: declare the targets shefl links (core; pull for completeness).
function(_shefl_prometheus name soname)
  if(EXISTS "${_shefl_lib}/${soname}" AND NOT TARGET prometheus-cpp::${name})
    add_library(prometheus-cpp::${name} SHARED IMPORTED)
    set_target_properties(prometheus-cpp::${name} PROPERTIES
      IMPORTED_LOCATION "${_shefl_lib}/${soname}"
      INTERFACE_INCLUDE_DIRECTORIES "${_shefl_usr}/include"
      INTERFACE_LINK_LIBRARIES "${ARGN}")
  endif()
endfunction()
_shefl_prometheus(core libprometheus-cpp-core.so.1.0)
if(NOT TARGET prometheus-cpp::core)
  message(FATAL_ERROR "SHEFL_PREFIX: no libprometheus-cpp-core.so.1.0 in ${_shefl_lib}")
endif()
_shefl_prometheus(pull libprometheus-cpp-pull.so.1.0 prometheus-cpp::core)

# CUDA 13 has no libnvToolsExt; older Caffe2 configs link CUDA::nvToolsExt.
# Find the toolkit first and let that name stand for the header-only nvtx3
# (FindCUDAToolkit leaves existing targets alone when Torch runs it again).
if(CMAKE_CUDA_COMPILER)
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::nvtx3 AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    set_target_properties(CUDA::nvToolsExt PROPERTIES INTERFACE_LINK_LIBRARIES CUDA::nvtx3)
  endif()
endif()
