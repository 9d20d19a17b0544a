#ifndef ST_NOFP_H
#define ST_NOFP_H
#include <stdint.h>
uint64_t st_nofp_hot(uint64_t rounds);
uint64_t st_nofp_outer(double seconds);
#endif
