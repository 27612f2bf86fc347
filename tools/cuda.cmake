# gdak-perf-cuda (tools/cuda/): included from here, not from the test lists,
# so that it builds with GDAK_TESTS=OFF too.
include(${CMAKE_CURRENT_LIST_DIR}/cuda/cuda.cmake)
