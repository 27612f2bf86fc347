# tools/rxe: the soft-RoCE guest harness (gdak-rxe-vm, a script) and
# gdak-rxe-peer, a plain libibverbs program that is the far end of the wire
# interop tests (it does not link gdak).
add_executable(gdak-rxe-peer ${CMAKE_CURRENT_LIST_DIR}/rxe/rxe_peer.c)
target_link_libraries(gdak-rxe-peer PRIVATE PkgConfig::IBVERBS)
gdak_set_warnings(gdak-rxe-peer)
install(TARGETS gdak-rxe-peer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${CMAKE_CURRENT_LIST_DIR}/rxe/gdak-rxe-vm DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_CURRENT_LIST_DIR}/rxe/guest-init
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gdak/rxe)
