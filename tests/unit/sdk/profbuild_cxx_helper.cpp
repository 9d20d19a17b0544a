// A C++ function with a mangled name for test_profbuild, and a reference to
// abi::__cxa_demangle so libstdc++ is really linked (as in a C++ program).
#include <cxxabi.h>

namespace pushprof_test {
struct Widget {
  static int spin(int n);
};
__attribute__((noinline)) int Widget::spin(int n) {
  volatile int acc = 0;
  for (int i = 0; i < n; i++)
    acc = acc + i;
  return acc;
}
} // namespace pushprof_test

extern "C" void *profbuild_cxx_function(void) {
  return reinterpret_cast<void *>(&pushprof_test::Widget::spin);
}
extern "C" void *profbuild_cxx_demangler(void) {
  return reinterpret_cast<void *>(&abi::__cxa_demangle);
}
