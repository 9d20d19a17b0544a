# examples/: each example runs through the real sidecar (tests/integration/examples).
# They need the SDK's push path (pushprof_flush) and, for the services and the
# Python binding, per-thread labels (pushprof_label_set).
if(NOT TARGET pushprof OR NOT TARGET pushprof-sidecar)
  return()
endif()
file(READ ${PROJECT_SOURCE_DIR}/sdk/include/pushprof.h EX_PUSHPROF_H)
if(NOT EX_PUSHPROF_H MATCHES "pushprof_flush")
  return()
endif()
set(EX_IT ${CMAKE_CURRENT_SOURCE_DIR}/integration/examples)
pushprof_script_test(NAME it_example_batch_job COMMAND bash ${EX_IT}/it_example_batch_job.sh)
pushprof_script_test(NAME it_example_preload COMMAND bash ${EX_IT}/it_example_preload.sh)
if(NOT EX_PUSHPROF_H MATCHES "pushprof_label_set")
  return()
endif()
pushprof_script_test(NAME it_example_c_service COMMAND bash ${EX_IT}/it_example_c_service.sh)
pushprof_script_test(NAME it_example_cpp_service COMMAND bash ${EX_IT}/it_example_cpp_service.sh)
pushprof_script_test(NAME it_example_python COMMAND bash ${EX_IT}/it_example_python.sh)
