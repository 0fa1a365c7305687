# SPDX-License-Identifier: Apache-2.0
# Fuzz targets for the parsers (docs/design/fuzzing.md).
#
# WARPSCOPE_FUZZ=ON (clang only): every target of the project is compiled with coverage and
# sanitizer instrumentation, and each warpscope_add_fuzzer() call builds a libFuzzer binary
# <build>/fuzz/<name>_fuzzer. ctest's <name>_fuzz_replay then runs that binary once over the
# corpus (-runs=0).
#
# WARPSCOPE_FUZZ=OFF (the default, any compiler): the same <name>_fuzzer.cc is linked with
# test/fuzz/replay_main.cc into <build>/tests/<name>_fuzz_replay, a unit test that feeds every
# file of the corpus directory to LLVMFuzzerTestOneInput, so CI replays the corpus on every build.

option(WARPSCOPE_FUZZ "Build libFuzzer targets for the parsers (needs clang)" OFF)

if(WARPSCOPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR
      "WARPSCOPE_FUZZ=ON needs clang (libFuzzer ships with it), but the C++ compiler is "
      "${CMAKE_CXX_COMPILER_ID}. Configure a fresh build directory with "
      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (apt-get install clang), "
      "or run scripts/fuzz.sh, which does that.")
  endif()
  # Instrument all project code, not only the fuzzer sources, so that coverage feedback reaches
  # the parsers and the sanitizers see their memory and arithmetic. UB aborts instead of
  # printing and carrying on, so libFuzzer records it as a crash. -O1 -g whatever the build
  # type: fast enough to fuzz, and stack traces stay readable.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g)
  add_link_options(-fsanitize=address,undefined)
  set(WARPSCOPE_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined)

  # clang links the sanitizer and coverage runtimes into executables only, so an instrumented
  # shared library (the NVML simulator) has undefined runtime symbols that the loading process
  # provides. Shared libraries linked with --no-undefined get -z undefs appended (the last of
  # the two wins), once every directory has added its targets.
  function(_warpscope_fuzz_allow_runtime_symbols dir)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
        target_link_options(${target} PRIVATE "LINKER:-z,undefs")
      endif()
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(subdir IN LISTS subdirs)
      _warpscope_fuzz_allow_runtime_symbols(${subdir})
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR}
                 CALL _warpscope_fuzz_allow_runtime_symbols ${PROJECT_SOURCE_DIR})
endif()

# warpscope_add_fuzzer(NAME procfs_parse SOURCES procfs_parse_fuzzer.cc
#                      DEPS warpscope::procfs_source CORPUS <dir>)
# NAME names the executables (<NAME>_fuzzer, <NAME>_fuzz_replay); CORPUS is the seed directory,
# relative to the source root or absolute (default: test/data/fuzz/<NAME>).
function(warpscope_add_fuzzer name)
  cmake_parse_arguments(ARG "" "CORPUS" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_CORPUS)
    set(ARG_CORPUS test/data/fuzz/${name})
  endif()
  cmake_path(ABSOLUTE_PATH ARG_CORPUS BASE_DIRECTORY ${PROJECT_SOURCE_DIR}
             NORMALIZE OUTPUT_VARIABLE corpus)
  if(NOT IS_DIRECTORY ${corpus})
    message(FATAL_ERROR "warpscope_add_fuzzer(${name}): corpus directory ${corpus} is missing; "
                        "create it with at least one seed input")
  endif()

  if(WARPSCOPE_FUZZ)
    set(target ${name}_fuzzer)
    add_executable(${target} ${ARG_SOURCES})
    target_link_libraries(${target} PRIVATE ${ARG_DEPS} fmt::fmt)
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/test)
    target_link_options(${target} PRIVATE ${WARPSCOPE_FUZZ_FLAGS})
    warpscope_target_defaults(${target})
    set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
    if(WARPSCOPE_BUILD_TESTS)
      # -runs=0 executes every corpus input once and stops.
      add_test(NAME ${name}_fuzz_replay COMMAND ${target} -runs=0 ${corpus})
      set_tests_properties(${name}_fuzz_replay PROPERTIES LABELS unit)
    endif()
  elseif(WARPSCOPE_BUILD_TESTS)
    set(target ${name}_fuzz_replay)
    add_executable(${target} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/test/fuzz/replay_main.cc)
    target_link_libraries(${target} PRIVATE ${ARG_DEPS} fmt::fmt)
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/test)
    warpscope_target_defaults(${target})
    set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
    add_test(NAME ${target} COMMAND ${target} ${corpus})
    set_tests_properties(${target} PROPERTIES LABELS unit)
  endif()
endfunction()
