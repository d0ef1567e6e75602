# The coordinator's torch-free state: the client registry, the round's
# books, the stallers' strikes and the upload assembler (untrusted bytes in). A library of its
# own so that the fuzz build (fuzz/clang) links it without LibTorch.
add_library(shefl_server_state STATIC
  ${CMAKE_CURRENT_LIST_DIR}/client_registry.cc
  ${CMAKE_CURRENT_LIST_DIR}/round_state.cc
  ${CMAKE_CURRENT_LIST_DIR}/staller_book.cc
  ${CMAKE_CURRENT_LIST_DIR}/upload_assembler.cc)
target_link_libraries(shefl_server_state PUBLIC shefl_fed shefl_proto
  absl::cord)
