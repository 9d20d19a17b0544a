# The SDK's public API: configuration unit test, install/export check, and
# integration tests running real workloads linked and under LD_PRELOAD.
pushprof_unit_test(NAME test_env_config
  SOURCES unit/test_env_config.c ${PROJECT_SOURCE_DIR}/sdk/env_config.c)
target_include_directories(test_env_config PRIVATE ${PROJECT_SOURCE_DIR}/sdk
  ${PROJECT_SOURCE_DIR}/sdk/include)
