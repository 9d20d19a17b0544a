/* http_module_get() for pushprof-sidecar: dlopen()s pushprof-sidecar-http.so
 * the first time an --export URL needs it (see http_module.h). Looked for
 * beside the executable (/proc/self/exe: a build tree, or both files copied
 * together), then in the module directory of an installation, found relative
 * to the executable (a prefix moved after `cmake --install --prefix`), then
 * at the absolute path it was built for. The first file that exists is the
 * one: a broken module is reported, not skipped. */
#include "http_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

#if !defined(PUSHPROF_HTTP_MODULE_DIR) || !defined(PUSHPROF_HTTP_MODULE_RELDIR)
#error "define PUSHPROF_HTTP_MODULE_DIR and PUSHPROF_HTTP_MODULE_RELDIR (sidecar/CMakeLists.txt)"
#endif

static const http_module_host host = {
    .abi = HTTP_MODULE_ABI,
    .size = sizeof(http_module_host),
    .log_vevent = log_vevent,
    .log_quote = log_quote,
    .metrics_drop = metrics_drop,
    .metrics_export_failure = metrics_export_failure,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool tried;                /* under mu */
static const http_module *loaded; /* under mu; the handle stays open for good */
static char failure[2048];        /* under mu: why it did not load, once tried */

/* Loads path; NULL with why (path and reason, one clause) on failure. */
static const http_module *load(const char *path, char *why, size_t whylen) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    /* dlerror() names the file. */
    (void)!snprintf(why, whylen, "dlopen: %s", e ? e : "unknown error");
    return NULL;
  }
  http_module_entry_fn entry = (http_module_entry_fn)dlsym(h, HTTP_MODULE_ENTRY);
  const http_module *m = entry ? entry(&host) : NULL;
  if (!entry) {
    (void)!snprintf(why, whylen, "%s: has no %s (not a pushprof-sidecar HTTP module)", path,
                    HTTP_MODULE_ENTRY);
  } else if (!m || m->abi != HTTP_MODULE_ABI || m->size != sizeof *m ||
             m->sizeof_exporter != sizeof(exporter) ||
             m->sizeof_exporter_options != sizeof(exporter_options) ||
             m->sizeof_export_object != sizeof(export_object) || !m->s3 || !m->gs ||
             !m->pyroscope || !m->otlp) {
    (void)!snprintf(why, whylen, "%s: built for another version of pushprof-sidecar", path);
  } else {
    return m;
  }
  dlclose(h);
  return NULL;
}

/* Directory of the running executable into out; -1 if unknown. */
static int exe_dir(char *out, size_t outlen) {
  ssize_t n = readlink("/proc/self/exe", out, outlen - 1);
  if (n <= 0 || (size_t)n >= outlen - 1)
    return -1;
  out[n] = '\0';
  char *slash = strrchr(out, '/');
  if (!slash)
    return -1;
  slash[slash == out ? 1 : 0] = '\0';
  return 0;
}

#define DIR_MAX 1024

/* Tries the candidates in order; sets loaded or failure. Under mu. */
static void find_and_load(void) {
  char exe[DIR_MAX], dirs[3][DIR_MAX], looked[3 * DIR_MAX] = "";
  size_t n = 0, o = 0;
  if (exe_dir(exe, sizeof exe) == 0) {
    if (snprintf(dirs[n], DIR_MAX, "%s", exe) < DIR_MAX)
      n++;
    if (PUSHPROF_HTTP_MODULE_RELDIR[0] &&
        snprintf(dirs[n], DIR_MAX, "%s/%s", exe, PUSHPROF_HTTP_MODULE_RELDIR) < DIR_MAX)
      n++;
  }
  if (snprintf(dirs[n], DIR_MAX, "%s", PUSHPROF_HTTP_MODULE_DIR) < DIR_MAX)
    n++;
  for (size_t i = 0; i < n; i++) {
    /* The same directory reached twice (the installed layout) is tried once. */
    char real[PATH_MAX];
    if (realpath(dirs[i], real) && strlen(real) < DIR_MAX)
      memcpy(dirs[i], real, strlen(real) + 1);
    bool seen = false;
    for (size_t j = 0; j < i; j++)
      seen |= strcmp(dirs[i], dirs[j]) == 0;
    if (seen)
      continue;
    char path[DIR_MAX + sizeof HTTP_MODULE_FILE + 1];
    if (snprintf(path, sizeof path, "%s/%s", dirs[i], HTTP_MODULE_FILE) >= (int)sizeof path)
      continue;
    /* (Not logged when loaded: a sidecar refusing a bad URL at start says
     * one line; /proc/PID/maps shows which module a sidecar uses.) */
    if (access(path, F_OK) == 0) {
      loaded = load(path, failure, sizeof failure);
      return;
    }
    int w = snprintf(looked + o, sizeof looked - o, "%s%s", o ? ", " : "", dirs[i]);
    if (w > 0)
      o = o + (size_t)w < sizeof looked ? o + (size_t)w : sizeof looked - 1;
  }
  (void)!snprintf(failure, sizeof failure, "not found in %s", looked);
}

const http_module *http_module_get(const char *scheme, char *err, size_t errlen) {
  pthread_mutex_lock(&mu);
  if (!tried) {
    find_and_load();
    tried = true;
  }
  const http_module *m = loaded;
  if (!m)
    (void)!snprintf(err, errlen,
                    "the %s exporter needs %s: %s; reinstall pushprof so that it is beside "
                    "pushprof-sidecar or in %s, or export to file:// only",
                    scheme, HTTP_MODULE_FILE, failure, PUSHPROF_HTTP_MODULE_DIR);
  pthread_mutex_unlock(&mu);
  return m;
}
