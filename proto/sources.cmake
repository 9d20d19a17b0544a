# Owned by the proto library (frame codec, pprof builder/validate/merge, gzip, client).
set(PUSHPROF_PROTO_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/pp_frame.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_hash.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_builder.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_pack.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_validate.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_decode.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_merge.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_gzip.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_client.c)
# Reader side (pushprof_proto_convert; not in the SDK): push decoding, gzip
# with igzip (ISA-L), conversions.
set(PUSHPROF_PROTO_CONVERT_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/pp_push.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_deflate.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_otlp.c
  ${CMAKE_CURRENT_LIST_DIR}/pp_split.c)
