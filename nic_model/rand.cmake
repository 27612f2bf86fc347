# Unpredictable identifiers (QPNs, MR key bytes, first PSNs): nm_rand.c.
target_sources(gdak_nic PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nm_rand.c)
