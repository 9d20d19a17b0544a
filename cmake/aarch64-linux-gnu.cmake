# Cross build for 64-bit Arm Linux with Debian's cross compiler and the
# arm64 multiarch libraries (tests/deps.sh --arch arm64 installs both):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Programs the build runs as tests go through qemu-user
# (CMAKE_CROSSCOMPILING_EMULATOR), so ctest works on an x86-64 machine.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(PUSHPROF_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${PUSHPROF_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PUSHPROF_TRIPLE}-g++)

# Debian multiarch: the target's libraries and headers live beside the
# host's, under /usr/lib/<triple> and /usr/include/<triple>.
set(CMAKE_FIND_ROOT_PATH /usr/${PUSHPROF_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${PUSHPROF_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config must answer with the target's .pc files, never the host's.
# /opt/pushprof-arm64: arm64 libraries Debian cannot install beside the
# amd64 ones (libisal), unpacked there by tests/deps.sh --arch arm64.
set(PUSHPROF_ARM64_ROOT /opt/pushprof-arm64)
set(ENV{PKG_CONFIG_LIBDIR}
  ${PUSHPROF_ARM64_ROOT}/usr/lib/${PUSHPROF_TRIPLE}/pkgconfig:/usr/lib/${PUSHPROF_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(PKG_CONFIG_EXECUTABLE pkg-config CACHE FILEPATH "")

# qemu-aarch64 from qemu-user; the target's loader and libraries are the
# multiarch ones (libc6:arm64), where qemu finds them without -L.
find_program(PUSHPROF_QEMU qemu-aarch64)
if(PUSHPROF_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${PUSHPROF_QEMU})
endif()
