/* `pushprof profile`: asks a sidecar's HTTP API for an on-demand profile
 * (POST /profile/cpu or /profile/heap, docs/sidecar.md) and writes the
 * answer to a file. Exit: 0 written, 1 the sidecar answered with an error
 * (printed), 2 usage, 3 the sidecar unreachable or no answer in time. */
#ifndef PUSHPROF_PROFILE_CMD_H
#define PUSHPROF_PROFILE_CMD_H
#include <stdio.h>

int profile_cmd_main(int argc, char **argv); /* argv[0] is "profile" */
void profile_cmd_usage(FILE *f);
#endif
