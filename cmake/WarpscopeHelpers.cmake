# SPDX-License-Identifier: Apache-2.0
# Target helpers: every target gets the same warnings, visibility and sanitizer flags.

function(warpscope_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
                         -Wno-missing-field-initializers)
  if(WARPSCOPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(WARPSCOPE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${WARPSCOPE_SANITIZE}
                           -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${WARPSCOPE_SANITIZE})
  endif()
endfunction()

# warpscope_add_library(NAME base SOURCES a.cc DEPS ...) -> target warpscope_base,
# alias warpscope::base. Include paths are rooted at src/ ("base/status.h").
function(warpscope_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target warpscope_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    warpscope_target_defaults(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(warpscope::${name} ALIAS ${target})
endfunction()

# warpscope_add_test(NAME foo_test SOURCES foo_test.cc DEPS ... LABELS unit
#                    [PROPERTIES RUN_SERIAL TRUE ...])   extra ctest properties of its tests
function(warpscope_add_test name)
  if(NOT WARPSCOPE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;PROPERTIES" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  warpscope_target_defaults(${name})
  # Test code is compiled without optimisation in the optimised build types: it is two thirds of
  # the build's compile time and its speed does not matter (the libraries under test keep their
  # flags; speed is measured by the benchmarks). -g1 keeps the line tables for backtraces.
  if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
    target_compile_options(${name} PRIVATE -O0 -g1)
  endif()
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    WARPSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    WARPSCOPE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" ${ARG_PROPERTIES}
                       DISCOVERY_TIMEOUT 60)
endfunction()

# warpscope_missing_peer_test(NAME browser_ui_test REASON "node is not installed: ...")
# A test that cannot be registered because its peer is missing at configure time: in CI
# (environment CI=true) it is registered as a test that fails with REASON, so a CI run never
# passes without it; elsewhere configuring only says so.
function(warpscope_missing_peer_test)
  cmake_parse_arguments(ARG "" "NAME;REASON" "" ${ARGN})
  if("$ENV{CI}" STREQUAL "true" OR "$ENV{CI}" STREQUAL "1")
    add_test(NAME ${ARG_NAME}
      COMMAND ${CMAKE_COMMAND} -E env sh -c "echo '${ARG_REASON} (CI=true: a missing peer fails)' >&2; exit 1")
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS integration)
  else()
    message(STATUS "${ARG_NAME}: not registered: ${ARG_REASON}")
  endif()
endfunction()
