# BLAKE3 from the official C implementation that Debian ships inside librust-blake3-dev.
# We compile it into a static library with its runtime SIMD dispatch (SSE2/SSE4.1/AVX2/AVX-512
# assembly on x86-64, NEON on arm64). We never hand-write a hash.

file(GLOB _blake3_dirs LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
list(SORT _blake3_dirs COMPARE NATURAL ORDER DESCENDING)
list(LENGTH _blake3_dirs _n)
if(_n EQUAL 0)
  message(FATAL_ERROR "BLAKE3 C sources not found under /usr/share/cargo/registry: install librust-blake3-dev (scripts/bootstrap does)")
endif()
list(GET _blake3_dirs 0 BLAKE3_C_DIR)
message(STATUS "BLAKE3 C sources: ${BLAKE3_C_DIR}")

set(_blake3_sources
  ${BLAKE3_C_DIR}/blake3.c
  ${BLAKE3_C_DIR}/blake3_dispatch.c
  ${BLAKE3_C_DIR}/blake3_portable.c)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  list(APPEND _blake3_sources
    ${BLAKE3_C_DIR}/blake3_sse2_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_sse41_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_avx2_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_avx512_x86-64_unix.S)
  set(_blake3_defs "")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  list(APPEND _blake3_sources ${BLAKE3_C_DIR}/blake3_neon.c)
  set(_blake3_defs BLAKE3_USE_NEON=1)
else()
  set(_blake3_defs BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()

add_library(blake3 STATIC ${_blake3_sources})
target_compile_definitions(blake3 PRIVATE ${_blake3_defs})
target_include_directories(blake3 SYSTEM PUBLIC ${BLAKE3_C_DIR})
set_target_properties(blake3 PROPERTIES C_STANDARD 99 POSITION_INDEPENDENT_CODE ON)
