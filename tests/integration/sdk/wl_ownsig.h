/* The own-SIGPROF test program's view of libwl_ownsig_init.so. */
#ifndef WL_OWNSIG_H
#define WL_OWNSIG_H
__attribute__((visibility("default"))) long ownsig_own(void);
__attribute__((visibility("default"))) long ownsig_foreign(void);
__attribute__((visibility("default"))) void ownsig_disarm(void);
__attribute__((visibility("default"))) int ownsig_install_late(void);
#endif
