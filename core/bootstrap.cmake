# Out-of-band bootstrap (<gdak/bootstrap.h>): TCP always.
target_sources(gdak_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/bootstrap_tcp.c)

# MPI bootstrap (<gdak/bootstrap.h> gdak_bootstrap_mpi_*): its own library,
# so only programs that use MPI link it.  Optional: Open MPI from Debian
# (libopenmpi-dev) or any MPI that CMake's FindMPI knows.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_library(gdak_mpi STATIC ${CMAKE_CURRENT_LIST_DIR}/src/bootstrap_mpi.c)
  add_library(gdak::mpi ALIAS gdak_mpi)
  target_include_directories(gdak_mpi PRIVATE ${CMAKE_CURRENT_LIST_DIR}/internal)
  target_link_libraries(gdak_mpi PUBLIC gdak MPI::MPI_C)
  # installed as libgdak_mpi.a, CMake target gdak::mpi (find_package(gdak
  # COMPONENTS mpi)) and pkg-config gdak-mpi (CMakeLists.txt)
  set_target_properties(gdak_mpi PROPERTIES OUTPUT_NAME gdak_mpi EXPORT_NAME mpi)
  gdak_set_warnings(gdak_mpi)
  set(GDAK_HAVE_MPI ON CACHE INTERNAL "gdak_mpi is built")
  message(STATUS "gdak: MPI bootstrap (gdak_mpi) (MPI ${MPI_C_VERSION})")
else()
  set(GDAK_HAVE_MPI OFF CACHE INTERNAL "gdak_mpi is built")
  message(STATUS "gdak: no MPI found: the MPI bootstrap is not built")
endif()
