# Tests of the proto library (frame codec, pprof builder/validate/merge/gzip, client).
pushprof_unit_test(NAME test_frame SOURCES unit/test_frame.c LIBS pushprof_proto)
pushprof_unit_test(NAME test_pprof SOURCES unit/test_pprof.c unit/pp_pack_ref.c LIBS pushprof_proto pushprof_proto_read
  pushprof_test_ref)
pushprof_unit_test(NAME test_pprof_decode SOURCES unit/test_pprof_decode.c unit/pp_decode_ref.c
  unit/pp_decode_scalar.c
  LIBS pushprof_proto pushprof_proto_read pushprof_test_ref)
pushprof_unit_test(NAME test_push SOURCES unit/test_push.c unit/pp_decode_ref.c unit/pp_decode_scalar.c LIBS pushprof_proto_read
  pushprof_proto)
pushprof_unit_test(NAME test_client SOURCES unit/test_client.c LIBS pushprof_proto Threads::Threads
  LABELS "unit;tsan")
pushprof_script_test(NAME it_proto_pprof_raw
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/it_proto_pprof_raw.sh
  LABELS integration)
