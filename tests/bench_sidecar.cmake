# Sidecar load generator: a benchmark, not a test (no add_test). Built with
# everything so it keeps compiling; run it through tests/bench/sidecar_bench.sh.
add_executable(bench_sidecar ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_sidecar.c)
target_link_libraries(bench_sidecar PRIVATE pushprof_proto Threads::Threads m)
# pprof -> OTLP conversion cost and wire size (README Performance / OTLP).
add_executable(bench_otlp ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_otlp.c)
target_link_libraries(bench_otlp PRIVATE pushprof_convert pushprof_proto_export_gen pushprof_test_ref
  pushprof_proto_read pushprof_proto)
# The sidecar's per-push user-space work: decode, merge, pack + gzip (README
# Performance / ingest).
add_executable(bench_ingest ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_ingest.c)
target_link_libraries(bench_ingest PRIVATE pushprof_proto_read pushprof_proto)
