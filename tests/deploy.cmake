# Deployment files (examples/deploy/): Kubernetes, systemd, Dockerfiles.
if(TARGET pushprof-sidecar AND TARGET pushprof_preload)
  pushprof_script_test(NAME it_deploy_files
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/deploy/it_deploy_files.sh
    TIMEOUT 120)
endif()
