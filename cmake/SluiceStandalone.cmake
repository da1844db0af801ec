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

