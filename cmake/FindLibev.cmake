# FindLibev: libev has no pkg-config file on Debian, so look for ev.h and the
# library directly.  The static archive is preferred (GDAK_LIBEV_STATIC, ON by
# default) so that gdak's programs run on machines without libev installed.
#   Libev_FOUND, Libev_INCLUDE_DIR, Libev_LIBRARY, target Libev::libev
include(FindPackageHandleStandardArgs)
if(NOT DEFINED GDAK_LIBEV_STATIC)
  set(GDAK_LIBEV_STATIC ON)
endif()
find_path(Libev_INCLUDE_DIR ev.h PATH_SUFFIXES libev)
if(GDAK_LIBEV_STATIC)
  find_library(Libev_LIBRARY NAMES libev.a ev)
else()
  find_library(Libev_LIBRARY NAMES ev)
endif()
# A path given by hand (-DLibev_INCLUDE_DIR=...) must really hold the files;
# a normal variable shadows the cache entry so the user's value is kept.
if(Libev_INCLUDE_DIR AND NOT EXISTS "${Libev_INCLUDE_DIR}/ev.h")
  set(Libev_INCLUDE_DIR "Libev_INCLUDE_DIR-NOTFOUND")
endif()
if(Libev_LIBRARY AND NOT EXISTS "${Libev_LIBRARY}")
  set(Libev_LIBRARY "Libev_LIBRARY-NOTFOUND")
endif()
find_package_handle_standard_args(Libev
  REQUIRED_VARS Libev_LIBRARY Libev_INCLUDE_DIR
  REASON_FAILURE_MESSAGE
    "libev (ev.h and libev.a) not found: install it with `apt-get install libev-dev`, or set Libev_INCLUDE_DIR and Libev_LIBRARY")
if(Libev_FOUND AND NOT TARGET Libev::libev)
  add_library(Libev::libev UNKNOWN IMPORTED)
  set_target_properties(Libev::libev PROPERTIES
    IMPORTED_LOCATION "${Libev_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Libev_INCLUDE_DIR}")
  if(Libev_LIBRARY MATCHES "\\.a$")
    # the static libev needs libm (ev_floor etc.)
    set_property(TARGET Libev::libev APPEND PROPERTY INTERFACE_LINK_LIBRARIES m)
  endif()
endif()
mark_as_advanced(Libev_INCLUDE_DIR Libev_LIBRARY)
