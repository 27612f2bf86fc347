# The verbs transport ("emu:verbs:DEV"): each emulated QP backed by a real RC
# QP on a libibverbs device (rxe, siw, an HCA).  libibverbs is already one of
# gdak's dependencies (gdak_deps).
target_sources(gdak_nic PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tr_verbs.c
  ${CMAKE_CURRENT_LIST_DIR}/tr_verbs_map.c
  ${CMAKE_CURRENT_LIST_DIR}/tr_verbs_mr.c
  ${CMAKE_CURRENT_LIST_DIR}/tr_verbs_stage.c)
