# The docs against the code: every sidecar flag and config key, every
# PUSHPROF_* variable, every relative link (tests/integration/docs).
pushprof_script_test(NAME it_docs
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/docs/check_docs.py ${CMAKE_SOURCE_DIR}
    $<TARGET_FILE:pushprof-sidecar>
  LABELS "integration;docs")
