# Precompiled headers (docs/TESTING.md, "Build and suite time"). A translation unit
# that reaches LibTorch's, gRPC's and the generated protocol's headers
# spends 10-20 s parsing them; loaded from a precompiled header they cost
# well under a second. GCC takes a precompiled header only when the -D set
# matches the one it was made with (else it warns, -Winvalid-pch, and
# parses as usual: slower, never wrong), so there is one per kind of
# target and set of defines:
#   kind:   torch | grpc | torch_grpc, from what the target links (its
#           closure of project libraries);
#   flavour: lib (no defines of its own) | test (the three SHEFL_*_DIR /
#           SHEFL_CTEST_COMMAND defines every tests/*_test.cc has).
# Each is built once, by a target of its own (shefl_pch_<flavour>_<kind>),
# and every matching target reuses it (REUSE_FROM). Targets with other
# defines, CUDA or generated sources get none.
# SHEFL_PCH=OFF builds without them (each file then parses what it names
# and nothing more); the LibTorch 2.x check and the thread-safety check
# never use them.
option(SHEFL_PCH "Precompiled headers for LibTorch, gRPC and the protocol" ON)

set(SHEFL_PCH_DIR ${CMAKE_CURRENT_LIST_DIR}/pch)
# The tests' own code is compiled at -O1 without debug information: the
# libraries they test keep the build's flags (-O2), and Catch2 names the
# failing expression and its values, so a test binary needs no -g. Half of
# a test's compile time was code generation at -O2 -g.
set(SHEFL_TEST_OPTIONS -O1 -g0)
set(SHEFL_TEST_DEFINES
  SHEFL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  SHEFL_BINARY_DIR="${CMAKE_BINARY_DIR}"
  SHEFL_CTEST_COMMAND="${CMAKE_CTEST_COMMAND}")

# Appends to `out` whether `target`'s link closure holds LibTorch (torch)
# and gRPC (grpc), walking project and imported targets.
function(_shefl_pch_links target out)
  set(seen "")
  set(todo ${target})
  set(found "")
  while(todo)
    list(POP_FRONT todo t)
    if(t IN_LIST seen OR t MATCHES "^\\$<|^-" OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    if(t STREQUAL "torch" OR t STREQUAL "torch_library")
      list(APPEND found torch)
    elseif(t STREQUAL "gRPC::grpc++")
      list(APPEND found grpc)
    endif()
    get_target_property(type ${t} TYPE)
    set(props INTERFACE_LINK_LIBRARIES)
    get_target_property(imported ${t} IMPORTED)
    if(NOT imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND props LINK_LIBRARIES)
    endif()
    foreach(p ${props})
      get_target_property(libs ${t} ${p})
      if(libs)
        list(APPEND todo ${libs})
      endif()
    endforeach()
  endwhile()
  list(REMOVE_DUPLICATES found)
  list(SORT found)
  string(REPLACE ";" "_" kind "${found}")
  set(${out} "${kind}" PARENT_SCOPE)
endfunction()

# The target that builds the precompiled header of one flavour and kind.
function(_shefl_pch_host flavour kind out)
  set(host shefl_pch_${flavour}_${kind})
  if(NOT TARGET ${host})
    add_library(${host} OBJECT ${SHEFL_PCH_DIR}/host.cc)
    set(headers ${SHEFL_PCH_DIR}/common.h)
    target_link_libraries(${host} PRIVATE shefl_core nlohmann_json::nlohmann_json)
    if(kind MATCHES "torch")
      list(APPEND headers ${SHEFL_PCH_DIR}/torch.h)
      target_link_libraries(${host} PRIVATE ${TORCH_LIBRARIES})
    endif()
    if(kind MATCHES "grpc")
      list(APPEND headers ${SHEFL_PCH_DIR}/grpc.h)
      target_link_libraries(${host} PRIVATE shefl_proto gRPC::grpc++)
    endif()
    if(flavour STREQUAL "test")
      target_compile_definitions(${host} PRIVATE ${SHEFL_TEST_DEFINES})
      target_compile_options(${host} PRIVATE ${SHEFL_TEST_OPTIONS})
    endif()
    target_precompile_headers(${host} PRIVATE ${headers})
  endif()
  set(${out} ${host} PARENT_SCOPE)
endfunction()

# Gives every eligible target under `dir` (recursively) its precompiled
# header. Called once, after every target exists.
function(shefl_precompile_headers dir)
  if(NOT SHEFL_PCH)
    return()
  endif()
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$"
       OR t MATCHES "^shefl_pch_|^shefl_proto$|^shefl_cuda")
      continue()
    endif()
    get_target_property(defs ${t} COMPILE_DEFINITIONS)
    if(NOT defs)
      set(flavour lib)
    elseif("${defs}" STREQUAL "${SHEFL_TEST_DEFINES}")
      set(flavour test)
    else()
      continue()  # defines of its own: no precompiled header would match
    endif()
    _shefl_pch_links(${t} kind)
    if(kind STREQUAL "")
      continue()
    endif()
    _shefl_pch_host(${flavour} ${kind} host)
    target_precompile_headers(${t} REUSE_FROM ${host})
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    shefl_precompile_headers(${sub})
  endforeach()
endfunction()
