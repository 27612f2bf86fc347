# RoCEv2 over UDP (nic_model/roce, nic_model/tr_udp*): unit tests of the
# protocol engine with a fake wire, and (label net) processes on loopback.
set(_gdak_roce_inc ${PROJECT_SOURCE_DIR}/nic_model/roce)

gdak_add_test(NAME gdak.net.roce_wire SOURCES net_roce_wire.c LABELS unit net TIMEOUT 60)
target_include_directories(gdak_net_roce_wire PRIVATE ${_gdak_roce_inc})

gdak_add_test(NAME gdak.net.roce_engine SOURCES net_roce_engine.c LABELS unit net TIMEOUT 120)
target_include_directories(gdak_net_roce_engine PRIVATE ${_gdak_roce_inc})
