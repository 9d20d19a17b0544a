/* A shared object whose .symtab names its functions with symbol versions,
 * as glibc's does: vfunc@VERS_1 (an old version) and vfunc@@VERS_2 (the
 * default), each at its own address (test_elfsym). Exported despite the
 * tree's -fvisibility=hidden: the version script decides what is. */
#define VISIBLE __attribute__((visibility("default"), noinline))
VISIBLE int vfunc_v1(int n);
VISIBLE int vfunc_v2(int n);

VISIBLE int vfunc_v1(int n) {
  return n * 3 + 1;
}

VISIBLE int vfunc_v2(int n) {
  return n * 5 + 2;
}

__asm__(".symver vfunc_v1, vfunc@VERS_1");
__asm__(".symver vfunc_v2, vfunc@@VERS_2");
