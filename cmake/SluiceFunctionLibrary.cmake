# Builds function libraries: sluice_add_function_library(NAME SOURCES ...).
#
# The library is lib<NAME>.so with hidden visibility, so only the ABI symbols
# (include/sluice/function_abi.h) are exported. As for transforms (SluiceTransform.cmake), builds
# are reproducible: source and build paths are mapped away, the build id is a hash of the
# content, and there is no RPATH (the host has Arrow loaded already).

# Inside the sluice tree, or standalone with -DSLUICE_ROOT=<sluice checkout> (what
# `sluice function test|check|publish DIR` do).
include(${CMAKE_CURRENT_LIST_DIR}/SluiceStandalone.cmake)

function(sluice_add_function_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${SLUICE_ROOT}/include ${SLUICE_ROOT}/schemas)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE arrow::arrow blake3 nlohmann_json::nlohmann_json)
  sluice_reproducible_library(${name} functions)
endfunction()
