/* `pushprof top|folded|flame|diff`: the views subcommands of the pushprof
 * command. argv[0] is the subcommand's name. Returns the exit status:
 * 0 done, 2 usage or bad input (one line on stderr naming the file and what
 * is wrong; no output file is created), 1 a write failed. */
#ifndef VIEW_CMD_H
#define VIEW_CMD_H
#include <stdbool.h>
#include <stdio.h>

bool view_cmd_known(const char *name);
int view_cmd_main(int argc, char **argv);
/* Usage lines of the subcommands. */
void view_cmd_usage(FILE *f);
#endif
