# The Dynamically Connected transport (DCI / DCT): nic_model/nm_dc.c.
target_sources(gdak_nic PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nm_dc.c)
