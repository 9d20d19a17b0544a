# How an application image adds pushprof without changing the program:
# copy libpushprof_preload.so (and its libraries) in and set LD_PRELOAD.
# Build from the repository root:
#   docker build -f examples/deploy/Dockerfile.app -t myapp:1.0 .
# For linux/amd64 and linux/arm64 at once (the library is built natively
# per platform; the application's image must be multi-arch too):
#   docker buildx build --platform linux/amd64,linux/arm64 -f examples/deploy/Dockerfile.app -t REGISTRY/myapp:1.0 --push .
# Not built by the tests (no container engine there).
FROM debian:bookworm AS pushprof
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev zlib1g-dev libisal-dev \
      libelf-dev libmicrohttpd-dev libinih-dev libssl-dev libcurl4-openssl-dev \
      libjansson-dev libxml2-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPUSHPROF_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target pushprof_preload \
 && install -m 0755 /build/sdk/libpushprof_preload.so /libpushprof_preload.so

# The application's own image; here a Debian program stands in for it.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libprotobuf-c1 zlib1g libelf1 xz-utils \
 && rm -rf /var/lib/apt/lists/*
COPY --from=pushprof /libpushprof_preload.so /usr/local/lib/libpushprof_preload.so
# The socket and spool paths come from the deployment (pod.yaml sets them);
# without PUSHPROF_SOCKET or PUSHPROF_OUTPUT the library stays off.
ENV LD_PRELOAD=/usr/local/lib/libpushprof_preload.so \
    PUSHPROF_SOCKET=/run/pushprof/pushprof.sock
USER 10001:10000
ENTRYPOINT ["/bin/sh", "-c", "head -c 200000000 /dev/urandom | xz -T1 -6 > /dev/null"]
