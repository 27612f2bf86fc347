# Out-of-band bootstrap (<gdak/bootstrap.h>): TCP always.
target_sources(gdak_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/bootstrap_tcp.c)
