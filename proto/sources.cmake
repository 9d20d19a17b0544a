# Owned by the proto library (frame codec, pprof builder/validate/merge, gzip, client).
set(PUSHPROF_PROTO_SOURCES)
