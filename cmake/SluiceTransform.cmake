# Builds batch transforms: sluice_add_transform(NAME SOURCES ... [TESTS ...]).
#
# Used two ways:
#   - inside the sluice build, where transforms/*/ are subdirectories of the root project;
#   - standalone, by `sluice transform test/publish DIR`, which configures DIR on its own with
#     -DSLUICE_ROOT=<the sluice checkout>. Then this file brings in Arrow from the checkout's
#     .venv, BLAKE3, GoogleTest and nlohmann_json itself.
#
# The library is lib<NAME>.so with hidden visibility, so only the ABI symbols are exported.
# Builds are reproducible: the same sources on the same toolchain give the same bytes wherever
# the checkout lives. Source and build paths are mapped away, the build id is a hash of the
# content, there is no RPATH (the host has Arrow loaded already), and nothing embeds a time.
# Each TESTS source becomes a gtest binary that gets the library's path as SLUICE_TRANSFORM_SO.
#
# The identity embeds the Arrow schemas of the transform's schema records, which only exist at
# run time; so the sources are first compiled into <NAME>-schema-generator (the SDK's
# SLUICE_TRANSFORM expands to a main() there), which writes them as hex literals into a
# header, and the library is then compiled with that header (include/sluice/sdk/transform.hpp).
# The header's bytes depend only on the schemas, so builds stay reproducible.

include(${CMAKE_CURRENT_LIST_DIR}/SluiceStandalone.cmake)

function(sluice_add_transform name)
  cmake_parse_arguments(ARG "" "" "SOURCES;TESTS" ${ARGN})
  set(generator ${name}-schema-generator)
  add_executable(${generator} ${ARG_SOURCES})
  target_include_directories(${generator} PRIVATE ${SLUICE_ROOT}/include ${SLUICE_ROOT}/schemas)
  target_compile_options(${generator} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_compile_definitions(${generator} PRIVATE SLUICE_TRANSFORM_SCHEMA_GENERATOR)
  target_link_libraries(${generator} PRIVATE arrow::arrow arrow::compute blake3
    nlohmann_json::nlohmann_json)
  set(schema_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}-schemas)
  set(schema_header ${schema_dir}/sluice_transform_schemas.h)
  add_custom_command(OUTPUT ${schema_header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${schema_dir}
    # A sanitized build's generator must not fail the build over leaks at exit.
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:${generator}>
      ${schema_header}
    DEPENDS ${generator}
    COMMENT "Generating the Arrow schemas of transform ${name}"
    VERBATIM)
  add_library(${name} SHARED ${ARG_SOURCES} ${schema_header})
  target_include_directories(${name} PRIVATE ${schema_dir})
  target_compile_definitions(${name} PRIVATE
    SLUICE_TRANSFORM_SCHEMA_HEADER="sluice_transform_schemas.h")
  target_include_directories(${name} PRIVATE ${SLUICE_ROOT}/include ${SLUICE_ROOT}/schemas)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE arrow::arrow arrow::compute blake3 nlohmann_json::nlohmann_json)
  sluice_reproducible_library(${name} transform)
  foreach(test_source IN LISTS ARG_TESTS)
    get_filename_component(test_name "${test_source}" NAME_WE)
    set(test_target "${name}-${test_name}")
    add_executable(${test_target} ${test_source})
    target_include_directories(${test_target} PRIVATE ${SLUICE_ROOT}/include ${SLUICE_ROOT}/schemas)
    target_compile_options(${test_target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
    target_link_libraries(${test_target} PRIVATE arrow::arrow arrow::compute blake3
      nlohmann_json::nlohmann_json
      GTest::gtest GTest::gtest_main ${CMAKE_DL_LIBS})
    # Loaded like the host loads the library: with Arrow's core and compute libraries already
    # in the process (the library has no RPATH), even where the test itself uses no compute
    # symbol and the linker would drop an unused one.
    target_link_options(${test_target} PRIVATE "LINKER:--no-as-needed")
    target_compile_definitions(${test_target} PRIVATE SLUICE_TRANSFORM_SO="$<TARGET_FILE:${name}>")
    add_dependencies(${test_target} ${name})
    gtest_discover_tests(${test_target} DISCOVERY_TIMEOUT 60 TEST_PREFIX "${name}.")
  endforeach()
endfunction()
