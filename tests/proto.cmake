# Tests of the proto library (frame codec, pprof builder/validate/merge/gzip, client).
pushprof_unit_test(NAME test_frame SOURCES unit/test_frame.c LIBS pushprof_proto)
pushprof_unit_test(NAME test_pprof SOURCES unit/test_pprof.c LIBS pushprof_proto)
