// A C++ workload: the profile must show demangled names (namespaces,
// templates, overloads) in Function.name and the mangled ones in system_name.
//   wl_cxx [CPU seconds, default 0.6]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>
#ifdef WL_LINKED
#include "pushprof.h"
#endif

namespace cxxwork {
static double thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

template <int N> struct Kernel {
  __attribute__((noinline)) static std::uint64_t run(double seconds) {
    volatile std::uint64_t acc = 0;
    double end = thread_cpu() + seconds;
    while (thread_cpu() < end)
      for (std::uint64_t i = 0; i < 50000; i++)
        acc += i * N;
    return acc;
  }
};

class Matrix {
public:
  __attribute__((noinline)) std::uint64_t multiply(double seconds, int scale);
};

std::uint64_t Matrix::multiply(double seconds, int scale) {
  volatile std::uint64_t acc = 0;
  double end = thread_cpu() + seconds;
  while (thread_cpu() < end)
    for (std::uint64_t i = 0; i < 50000; i++)
      acc += i * std::uint64_t(scale);
  return acc;
}
} // namespace cxxwork

int main(int argc, char **argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.6;
  if (!(seconds > 0 && seconds <= 600)) {
    std::fprintf(stderr, "usage: wl_cxx [CPU seconds, 0..600]\n");
    return 2;
  }
#ifdef WL_LINKED
  int rc = pushprof_start(nullptr);
  if (rc != 0) {
    std::fprintf(stderr, "wl_cxx: pushprof_start: %s\n", pushprof_strerror(rc));
    return 3;
  }
#endif
  cxxwork::Matrix m;
  std::uint64_t sink = cxxwork::Kernel<3>::run(seconds / 2) + m.multiply(seconds / 2, argc + 6);
  // Uses libstdc++ as real C++ programs do (the SDK demangles with the
  // process's own __cxa_demangle).
  std::vector<std::string> out{"sink=" + std::to_string(sink & 1)};
  std::printf("%s\n", out[0].c_str());
  return 0;
}
