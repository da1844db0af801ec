# The setup a standalone build of one transform or function library needs: when the project is
# not the sluice tree itself, Arrow from the checkout's .venv, BLAKE3, GoogleTest and
# nlohmann_json (used by cmake/SluiceTransform.cmake and cmake/SluiceFunctionLibrary.cmake).

if(NOT SLUICE_ROOT)
  get_filename_component(SLUICE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()

if(NOT TARGET arrow::arrow)
  # A standalone build.
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


# A shared library whose bytes depend only on its sources and toolchain: lib<NAME>.so with
# hidden visibility (only the ABI symbols are exported), source and build paths mapped away
# (the sources show as <label>/), a content-hash build id, and no RPATH (the host has Arrow
# loaded already).
function(sluice_reproducible_library name label)
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    SKIP_BUILD_RPATH ON)
  target_compile_options(${name} PRIVATE
    -ffile-prefix-map=${CMAKE_CURRENT_SOURCE_DIR}=${label}
    -ffile-prefix-map=${SLUICE_ROOT}=sluice
    -ffile-prefix-map=${CMAKE_BINARY_DIR}=build
    -frandom-seed=${name})
  target_link_options(${name} PRIVATE -Wl,--build-id=sha1)
endfunction()
