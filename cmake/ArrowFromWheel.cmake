# Arrow C++ 26 comes from the pinned pyarrow wheel in .venv/ (Debian does not package it).
# pyarrow tells us where its headers and shared libraries are; the bootstrap has already
# created the unversioned link names with pyarrow.create_library_symlinks().
#
# Defines imported targets arrow::arrow, arrow::compute, arrow::acero, arrow::dataset,
# arrow::parquet and arrow::s3. Their include directories are SYSTEM, so Arrow's headers do not trip our
# warnings, and every binary gets an RPATH to the wheel's library folder.

if(NOT SLUICE_ROOT)
  set(SLUICE_ROOT "${CMAKE_SOURCE_DIR}")
endif()
set(SLUICE_PYTHON "${SLUICE_ROOT}/.venv/bin/python" CACHE FILEPATH
    "Python interpreter whose pyarrow provides Arrow C++")
if(NOT EXISTS "${SLUICE_PYTHON}")
  message(FATAL_ERROR "${SLUICE_PYTHON} does not exist: run scripts/bootstrap first (make build does)")
endif()
get_filename_component(SLUICE_VENV_BIN "${SLUICE_PYTHON}" DIRECTORY)

execute_process(
  COMMAND "${SLUICE_PYTHON}" -c
          "import pyarrow as pa; print(pa.get_include()); print(pa.get_library_dirs()[0]); print(pa.__version__)"
  OUTPUT_VARIABLE _pa_out
  RESULT_VARIABLE _pa_rc
  ERROR_VARIABLE _pa_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _pa_rc EQUAL 0)
  message(FATAL_ERROR "cannot import pyarrow with ${SLUICE_PYTHON}: ${_pa_err}")
endif()
string(REPLACE "\n" ";" _pa_lines "${_pa_out}")
list(GET _pa_lines 0 ARROW_INCLUDE_DIR)
list(GET _pa_lines 1 ARROW_LIB_DIR)
list(GET _pa_lines 2 PYARROW_VERSION)
message(STATUS "Arrow C++ from pyarrow ${PYARROW_VERSION}: ${ARROW_LIB_DIR}")

function(_sluice_arrow_target target libname)
  set(_path "${ARROW_LIB_DIR}/lib${libname}.so")
  if(NOT EXISTS "${_path}")
    message(FATAL_ERROR "${_path} is missing: run scripts/bootstrap, which creates Arrow's link names")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${_path}"
    INTERFACE_INCLUDE_DIRECTORIES "${ARROW_INCLUDE_DIR}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${ARROW_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${ARGN}")
endfunction()

_sluice_arrow_target(arrow::arrow arrow)
_sluice_arrow_target(arrow::compute arrow_compute arrow::arrow)
_sluice_arrow_target(arrow::acero arrow_acero arrow::compute)
_sluice_arrow_target(arrow::parquet parquet arrow::arrow)
# S3 lives in its own module in Arrow 26 wheels; loading it registers the s3:// scheme.
_sluice_arrow_target(arrow::s3 arrow_s3 arrow::arrow)
_sluice_arrow_target(arrow::dataset arrow_dataset arrow::acero arrow::parquet)

# Binaries find the wheel's libraries without LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH "${ARROW_LIB_DIR}")
set(CMAKE_INSTALL_RPATH "${ARROW_LIB_DIR}")
