# cmake -DARGS=<file> -DPART=kernels|glue -P compile_check.cmake, run by
# cuda_compile_test (cuda/CMakeLists.txt writes ARGS). kernels: nvcc -c
# each CUDA source for sm_90. glue: the torch-side sources with
# -fsyntax-only and SHEFL_WITH_CUDA against LibTorch's c10/cuda headers and
# CUDA's runtime headers; LibTorch packages built without CUDA lack one
# generated header of c10/cuda, which a stub stands in for.
include(${ARGS})
set(work ${WORK}/${PART})
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work}/stub/c10/cuda/impl)
file(WRITE ${work}/stub/c10/cuda/impl/cuda_cmake_macros.h
     "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
get_filename_component(cuda_bin ${NVCC} DIRECTORY)
get_filename_component(cuda_root ${cuda_bin} DIRECTORY)

set(failed "")
set(n 0)
if(PART STREQUAL "kernels")
  foreach(src ${KERNELS})
    get_filename_component(name ${src} NAME_WE)
    message(STATUS "nvcc -c -std=c++17 -arch=sm_90 ${src}")
    execute_process(
      COMMAND ${NVCC} -c -std=c++17 -arch=sm_90 -I${ROOT} ${src}
              -o ${work}/${name}.o
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT EXISTS ${work}/${name}.o)
      list(APPEND failed ${src})
    endif()
    math(EXPR n "${n} + 1")
  endforeach()
elseif(PART STREQUAL "glue")
  set(includes -I${ROOT} -I${work}/stub)
  foreach(dir ${INCLUDES})
    # -isystem /usr/include would break libstdc++'s #include_next.
    if(NOT dir STREQUAL "/usr/include" AND NOT dir STREQUAL "/usr/local/include")
      list(APPEND includes -isystem ${dir})
    endif()
  endforeach()
  list(APPEND includes -isystem ${cuda_root}/include)
  foreach(src ${GLUE})
    message(STATUS "c++ -fsyntax-only -DSHEFL_WITH_CUDA ${src}")
    execute_process(
      COMMAND ${CXX} -std=gnu++17 -fsyntax-only -DSHEFL_WITH_CUDA
              -D_GLIBCXX_USE_CXX11_ABI=1 ${includes} ${src}
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      list(APPEND failed ${src})
    endif()
    math(EXPR n "${n} + 1")
  endforeach()
else()
  message(FATAL_ERROR "PART must be kernels or glue, got '${PART}'")
endif()

if(failed)
  message(FATAL_ERROR "did not compile: ${failed}")
endif()
if(n EQUAL 0)
  message(FATAL_ERROR "no ${PART} sources to compile")
endif()
message(STATUS "compiled ${n} ${PART} sources")
