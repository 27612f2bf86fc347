# Dependencies, each found properly, each failure naming the package to install.
find_package(PkgConfig)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found: install it with `apt-get install pkg-config`")
endif()

# rdma-core: <infiniband/mlx5dv.h> for the mlx5 formats, libibverbs for the
# verbs transport, libmlx5 for the hardware backend.
pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
if(NOT IBVERBS_FOUND)
  message(FATAL_ERROR "rdma-core's libibverbs not found (pkg-config libibverbs): "
                      "install it with `apt-get install libibverbs-dev`")
endif()
include(CheckIncludeFile)
set(CMAKE_REQUIRED_INCLUDES ${IBVERBS_INCLUDE_DIRS})
check_include_file(infiniband/mlx5dv.h GDAK_HAVE_MLX5DV_H)
unset(CMAKE_REQUIRED_INCLUDES)
if(NOT GDAK_HAVE_MLX5DV_H)
  message(FATAL_ERROR "<infiniband/mlx5dv.h> not found: install rdma-core's headers "
                      "with `apt-get install libibverbs-dev`")
endif()
pkg_check_modules(MLX5 IMPORTED_TARGET libmlx5)
if(GDAK_HW_MLX5 AND NOT MLX5_FOUND)
  message(FATAL_ERROR "GDAK_HW_MLX5=ON needs rdma-core's libmlx5 (pkg-config libmlx5): "
                      "install it with `apt-get install libibverbs-dev`")
endif()

find_package(Libev)
if(NOT Libev_FOUND)
  message(FATAL_ERROR "libev not found: install it with `apt-get install libev-dev`")
endif()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# CUDA: the NIC model loads the driver API at run time (dlopen), so the
# library never links libcuda; nvcc is only needed for the CUDA tests/tools.
set(GDAK_HAVE_CUDA OFF)
if(NOT GDAK_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${GDAK_CUDA_ARCH})
    endif()
    enable_language(CUDA)
    # Debian 12's CMake (3.25) FindCUDAToolkit stops the configure step with
    # a toolkit that no longer ships nvToolsExt (CUDA 13): it marks the
    # CUDA::nvToolsExt target deprecated without checking that it made it,
    # when the project requires 3.25 or later.  The minimum version is read
    # there only to decide about that warning, so it is lowered around the
    # call.  (The development machine's copy of the module had been patched
    # by hand; a fresh Debian 12 with /usr/local/cuda failed here.)
    set(_gdak_min_version ${CMAKE_MINIMUM_REQUIRED_VERSION})
    if(CMAKE_VERSION VERSION_LESS 3.27)
      set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_MINIMUM_REQUIRED_VERSION ${_gdak_min_version})
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    set(GDAK_HAVE_CUDA ON)
  elseif(GDAK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GDAK_CUDA=ON but no CUDA compiler was found: install the CUDA "
                        "toolkit (nvcc) or set CMAKE_CUDA_COMPILER")
  endif()
endif()
message(STATUS "gdak: CUDA ${GDAK_HAVE_CUDA}, hardware backend ${GDAK_HW_MLX5}, "
               "libev ${Libev_LIBRARY}")

# What gdak.pc's Libs line needs: libgdak.a is static, so its dependencies go
# into Libs.  libev by the library found (the static archive, normally),
# by name and not by path: the path is the build machine's (a multiarch
# directory, a -DLibev_LIBRARY), not the one the .pc is used on.
if(Libev_LIBRARY MATCHES "\\.a$")
  get_filename_component(_libev_name "${Libev_LIBRARY}" NAME)
  get_filename_component(_libev_dir "${Libev_LIBRARY}" DIRECTORY)
  set(GDAK_PC_LIBEV "-l:${_libev_name}")
  if(NOT _libev_dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
    set(GDAK_PC_LIBEV "-L${_libev_dir} ${GDAK_PC_LIBEV}")  # a libev outside the system's
  endif()
else()
  set(GDAK_PC_LIBEV "-lev")
endif()
# gdak.pc finds its prefix relative to itself, so an installed tree can be
# moved (or installed with --prefix somewhere else) and still be used.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(GDAK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  string(REGEX REPLACE "[^/]+" ".." _pc_up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(GDAK_PC_PREFIX "\${pcfiledir}/${_pc_up}")
endif()
set(GDAK_PC_EXTRA_LIBS "")
if(GDAK_HW_MLX5)
  set(GDAK_PC_EXTRA_LIBS "-lmlx5")
endif()

# One interface target carrying every dependency of libgdak.
add_library(gdak_deps INTERFACE)
target_link_libraries(gdak_deps INTERFACE PkgConfig::IBVERBS Libev::libev
                      Threads::Threads ${CMAKE_DL_LIBS})
if(GDAK_HW_MLX5)
  target_link_libraries(gdak_deps INTERFACE PkgConfig::MLX5)
endif()
