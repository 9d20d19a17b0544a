// cpp_service: the C service again in C++, built with pkg-config.
//
// Requests go through templated handlers (pipeline::Handler<Codec>), and one
// request in five is malformed: validation throws pipeline::BadRequest from
// deep in the handler and the worker catches it. So the profile shows
// demangled template names, and sampling and unwinding keep working while
// exceptions fly. Labels are set per request by an RAII guard, so they are
// cleared on the exception path too.
//
//   cpp_service [REQUESTS] [THREADS]    (defaults 500 and 4)
// Profile destination from the environment (PUSHPROF_SOCKET or PUSHPROF_OUTPUT).
#include <pushprof.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pipeline {

struct BadRequest : std::runtime_error {
  explicit BadRequest(const std::string &why) : std::runtime_error(why) {}
};

struct Json {
  static constexpr const char *route = "/orders";
  static constexpr int cost = 3;
};
struct Protobuf {
  static constexpr const char *route = "/inventory";
  static constexpr int cost = 2;
};

// Sets the calling thread's labels for one request; clears them on scope
// exit, exceptions included.
class LabelScope {
public:
  LabelScope(const char *trace_id, const char *route) {
    check(pushprof_label_set("trace_id", trace_id));
    check(pushprof_label_set("route", route));
  }
  ~LabelScope() {
    pushprof_labels_clear();
  }
  LabelScope(const LabelScope &) = delete;
  LabelScope &operator=(const LabelScope &) = delete;

private:
  static void check(int rc) {
    if (rc != 0)
      throw std::runtime_error(std::string("pushprof_label_set: ") + pushprof_strerror(rc));
  }
};

template <typename Codec> class Handler {
public:
  __attribute__((noinline)) std::uint64_t decode(std::uint64_t id) {
    std::uint64_t x = id | 1;
    for (long i = 0; i < Codec::cost * 400000L; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    return x;
  }
  __attribute__((noinline)) void validate(std::uint64_t id, std::uint64_t decoded) {
    if (id % 5 == 0)
      throw BadRequest("request " + std::to_string(id) + ": checksum " +
                       std::to_string(decoded % 997) + " does not match");
  }
  __attribute__((noinline)) std::uint64_t serve(std::uint64_t id) {
    std::uint64_t d = decode(id);
    validate(id, d);
    return d ^ decode(d);
  }
};

} // namespace pipeline

namespace {

std::atomic<long> next_request{0};
std::atomic<long> bad_requests{0};
std::atomic<std::uint64_t> sink{0};

template <typename Codec> __attribute__((noinline)) void dispatch(std::uint64_t id) {
  char trace[32];
  std::snprintf(trace, sizeof trace, "%016llx",
                static_cast<unsigned long long>(id * 0x9e3779b97f4a7c15ULL));
  pipeline::LabelScope labels(trace, Codec::route);
  pipeline::Handler<Codec> h;
  sink += h.serve(id);
}

void worker(long nreq) {
  for (;;) {
    long id = next_request.fetch_add(1);
    if (id >= nreq)
      return;
    try {
      if (id % 2)
        dispatch<pipeline::Json>(static_cast<std::uint64_t>(id));
      else
        dispatch<pipeline::Protobuf>(static_cast<std::uint64_t>(id));
    } catch (const pipeline::BadRequest &) {
      bad_requests++;
    }
  }
}

long arg_or(int argc, char **argv, int i, long def, long max) {
  if (argc <= i)
    return def;
  char *end;
  long v = std::strtol(argv[i], &end, 10);
  if (*end || v < 1 || v > max) {
    std::fprintf(stderr, "cpp_service: argument %d must be 1..%ld, got \"%s\"\n", i, max, argv[i]);
    std::exit(2);
  }
  return v;
}

} // namespace

int main(int argc, char **argv) {
  long nreq = arg_or(argc, argv, 1, 500, 10000000);
  long nthreads = arg_or(argc, argv, 2, 4, 64);
  int rc = pushprof_start(nullptr);
  if (rc != 0)
    std::fprintf(stderr, "cpp_service: pushprof_start: %s (running without profiling)\n",
                 pushprof_strerror(rc));
  std::vector<std::thread> pool;
  for (long i = 0; i < nthreads; i++)
    pool.emplace_back(worker, nreq);
  for (auto &t : pool)
    t.join();
  std::printf("cpp_service: %ld requests on %ld threads, %ld rejected\n", nreq, nthreads,
              bad_requests.load());
  if (rc == 0) {
    int src = pushprof_stop();
    if (src != 0) {
      std::fprintf(stderr, "cpp_service: pushprof_stop: %s\n", pushprof_strerror(src));
      return 1;
    }
  }
  return 0;
}
