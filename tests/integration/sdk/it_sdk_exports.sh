#!/usr/bin/env bash
# What the SDK's libraries make visible to the programs that use them:
# libpushprof.a defines only pushprof_* and otel_thread_ctx_v1 globally
# (it_sdk_static_names.sh links a program against it that defines the other
# names); the .so files export only those plus the deliberate interpositions
# listed here:
#   otel_thread_ctx_v1  the OpenTelemetry thread record pointer (ELF TLS),
#                   found by outside readers in the dynamic symbol table
#   pthread_create  interposed so threads created later are sampled
#   dlclose         interposed so a library's symbols outlive its unloading
#   sigaction, signal  interposed so a program that sets the sampling
#                   signal's action after start does not replace our handler
#   exec*, _exit, _Exit (preload only): flush the last window before the
#                   process replaces itself or skips atexit
# and neither interposes malloc: libpushprof_heap.so alone does, and exports
# nothing else but the hooks the SDK finds it by:
#   malloc, calloc, realloc, reallocarray, free, posix_memalign,
#   aligned_alloc, memalign, valloc, pvalloc, pushprof_heap_hooks_v1
# as libpushprof_wait.so alone interposes the calls that wait (its list is
# below, with pushprof_wait_hooks_v1).
. "$(dirname "$0")/../lib.sh"
L=${1:-$B/sdk}
api='^(pushprof_[A-Za-z0-9_]+|otel_thread_ctx_v1)$'
allowed_so='^(pthread_create|dlclose|sigaction|signal)$'
heap_syms='calloc free malloc memalign posix_memalign pushprof_heap_hooks_v1 pvalloc realloc reallocarray valloc aligned_alloc'
allowed_preload='^(execve|execv|execvp|execvpe|fexecve|execl|execlp|execle|_exit|_Exit)$'

# must_export SYMS WHAT: the documented API is all there.
must_export() {
  for fn in pushprof_start pushprof_stop pushprof_flush pushprof_thread_register \
    pushprof_label_set pushprof_labels_clear pushprof_labels_save pushprof_labels_restore \
    pushprof_strerror pushprof_version; do
    grep -qx "$fn" <<<"$1" || fail "$2 does not export $fn"
  done
}

syms=$(nm -g --defined-only "$L/libpushprof.a" | awk 'NF == 3 {print $3}' | sort -u)
bad=$(grep -Ev "$api" <<<"$syms" || true)
[ -z "$bad" ] || fail "libpushprof.a defines global symbols outside the API: $(echo $bad)"
must_export "$syms" libpushprof.a
echo "ok libpushprof.a defines globally: $(echo $syms)"

for so in libpushprof.so libpushprof_preload.so; do
  syms=$(nm -D --defined-only "$L/$so" | awk '{print $3}' | sed 's/@.*//' | sort -u)
  bad=$(grep -Ev "$api" <<<"$syms" | grep -Ev "$allowed_so" || true)
  [ "$so" = libpushprof_preload.so ] && bad=$(grep -Ev "$allowed_preload" <<<"$bad" || true)
  [ -z "$bad" ] || fail "$so exports symbols outside the API: $(echo $bad)"
  must_export "$syms" "$so"
  for fn in pthread_create sigaction signal; do
    grep -qx "$fn" <<<"$syms" || fail "$so does not interpose $fn"
  done
  readelf --dyn-syms -W "$L/$so" | grep -Eq ' TLS +GLOBAL +DEFAULT +[0-9]+ otel_thread_ctx_v1$' ||
    fail "$so does not export otel_thread_ctx_v1 as a TLS symbol"
  echo "ok $so exports: $(echo $syms)"
done

syms=$(nm -D --defined-only "$L/libpushprof_heap.so" | awk '{print $3}' | sed 's/@.*//' | sort -u)
want=$(tr ' ' '\n' <<<"$heap_syms" | sort -u)
[ "$syms" = "$want" ] || fail "libpushprof_heap.so exports $(echo $syms), want $(echo $want)"
needed=$(readelf -d "$L/libpushprof_heap.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
grep -q pushprof <<<"$needed" && fail "libpushprof_heap.so needs an SDK library: $(echo $needed)"
echo "ok libpushprof_heap.so exports: $(echo $syms); needs: $(echo $needed)"

# libpushprof_wait.so: the calls that wait, and its hooks.
wait_syms='accept accept4 clock_nanosleep connect epoll_pwait epoll_wait fdatasync fsync nanosleep
  poll ppoll pread pread64 pselect pthread_cond_timedwait pthread_cond_wait pthread_join
  pthread_mutex_lock pthread_rwlock_rdlock pthread_rwlock_wrlock pushprof_wait_hooks_v1 pwrite
  pwrite64 read readv recv recvfrom recvmsg select sem_timedwait sem_wait send sendmsg sendto sleep
  usleep wait waitid waitpid write writev'
syms=$(nm -D --defined-only "$L/libpushprof_wait.so" | awk '{print $3}' | sed 's/@.*//' | sort -u)
want=$(tr -s ' \n' '\n' <<<"$wait_syms" | sed '/^$/d' | sort -u)
[ "$syms" = "$want" ] || fail "libpushprof_wait.so exports $(echo $syms), want $(echo $want)"
needed=$(readelf -d "$L/libpushprof_wait.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
grep -q pushprof <<<"$needed" && fail "libpushprof_wait.so needs an SDK library: $(echo $needed)"
echo "ok libpushprof_wait.so exports: $(echo $syms); needs: $(echo $needed)"
echo pass
