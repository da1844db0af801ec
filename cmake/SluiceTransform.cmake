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

if(NOT SLUICE_ROOT)
  get_filename_component(SLUICE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()

if(NOT TARGET arrow::arrow)
  # Standalone build of one transform.
  set(CMAKE_CXX_STANDARD 20)
  set(CMAKE_CXX_STANDARD_REQUIRED ON)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  if(NOT CMAKE_BUILD_TYPE)
    set(CMAKE_BUILD_TYPE Release)
  endif()
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
  set(SLUICE_PYTHON "${SLUICE_ROOT}/.venv/bin/python" CACHE FILEPATH "Python with pyarrow")
  list(APPEND CMAKE_MODULE_PATH "${SLUICE_ROOT}/cmake")
  include(ArrowFromWheel)
  include(Blake3)
  find_package(GTest REQUIRED)
  find_package(nlohmann_json REQUIRED)
  include(GoogleTest)
  enable_testing()
endif()

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
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    SKIP_BUILD_RPATH ON)
  target_compile_options(${name} PRIVATE
    -ffile-prefix-map=${CMAKE_CURRENT_SOURCE_DIR}=transform
    -ffile-prefix-map=${SLUICE_ROOT}=sluice
    -ffile-prefix-map=${CMAKE_BINARY_DIR}=build
    -frandom-seed=${name})
  target_link_options(${name} PRIVATE -Wl,--build-id=sha1)
  foreach(test_source IN LISTS ARG_TESTS)
    get_filename_component(test_name "${test_source}" NAME_WE)
    set(test_target "${name}-${test_name}")
    add_executable(${test_target} ${test_source})
    target_include_directories(${test_target} PRIVATE ${SLUICE_ROOT}/include ${SLUICE_ROOT}/schemas)
    target_compile_options(${test_target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
    target_link_libraries(${test_target} PRIVATE arrow::arrow arrow::compute blake3
      nlohmann_json::nlohmann_json
      GTest::gtest GTest::gtest_main ${CMAKE_DL_LIBS})
    target_compile_definitions(${test_target} PRIVATE SLUICE_TRANSFORM_SO="$<TARGET_FILE:${name}>")
    add_dependencies(${test_target} ${name})
    gtest_discover_tests(${test_target} DISCOVERY_TIMEOUT 60 TEST_PREFIX "${name}.")
  endforeach()
endfunction()
