# The version every binary prints with --version: project()'s VERSION and
# the git commit the build was configured from ("unknown" in a tree without
# git, such as a source tarball or an image's copy). The commit is read when
# CMake configures, so a build after new commits without a re-configure
# still names the older one.
set(SHEFL_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" rev-parse --short=7 HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE commit
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE status
    ERROR_QUIET)
  if(status EQUAL 0 AND commit MATCHES "^[0-9a-f]+$")
    set(SHEFL_GIT_COMMIT "${commit}")
  endif()
endif()
message(STATUS "shefl ${PROJECT_VERSION} (git ${SHEFL_GIT_COMMIT})")
