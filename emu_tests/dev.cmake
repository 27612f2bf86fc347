# Device API (device/include/gdak/dev) unit tests: host threads play the
# device against fake descriptors in local memory; no NIC.
gdak_add_test(NAME gdak.dev.wqe SOURCES dev_wqe.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.db SOURCES dev_db.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.cq SOURCES dev_cq.c LABELS unit MEMCHECK)
