"""pushprof for Python: a thin ctypes wrapper over libpushprof.

No build step. The library loaded is the one named by PUSHPROF_LIBRARY (a
path), else libpushprof.so through the system loader (LD_LIBRARY_PATH,
ldconfig paths).

    import pushprof
    pushprof.start()                    # settings from PUSHPROF_* variables
    with pushprof.labels(trace_id="abc123", route="/checkout"):
        handle_request()
    pushprof.stop()                     # final push (also done at exit)

Every failure raises pushprof.Error whose message is the SDK's own
(pushprof_strerror) and whose .code is the PUSHPROF_E* number.

Labels are per OS thread, like the SDK's: a label set in one thread is not
seen by samples of another thread. The SDK has no way to read labels back,
so this module remembers, per thread, the values it set, and labels()
restores them on exit (exceptions included). Labels set directly through the
C API behind this module's back are not known to it.
"""
import ctypes
import ctypes.util
import os
import threading

__all__ = ["Error", "start", "stop", "flush", "set_label", "clear_labels", "labels", "version"]


class Error(Exception):
    """A pushprof call failed; .code is the SDK's error code (negative)."""

    def __init__(self, func, code, message):
        super().__init__("%s: %s" % (func, message))
        self.func = func
        self.code = code


def _load():
    path = os.environ.get("PUSHPROF_LIBRARY") or "libpushprof.so"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "pushprof: cannot load %s (%s): set PUSHPROF_LIBRARY to the path of "
            "libpushprof.so, or install it where the loader finds it" % (path, e)) from None
    sigs = {
        "pushprof_start": ([ctypes.c_void_p], ctypes.c_int),
        "pushprof_stop": ([], ctypes.c_int),
        "pushprof_flush": ([ctypes.c_int], ctypes.c_int),
        "pushprof_label_set": ([ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
        "pushprof_labels_clear": ([], ctypes.c_int),
        "pushprof_strerror": ([ctypes.c_int], ctypes.c_char_p),
        "pushprof_version": ([], ctypes.c_char_p),
    }
    for name, (args, res) in sigs.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise ImportError("pushprof: %s in %s lacks %s (a newer libpushprof is needed)"
                              % (path, lib._name, name)) from None
        f.argtypes, f.restype = args, res
    return lib


_lib = _load()
_tls = threading.local()


def _check(func, rc):
    if rc != 0:
        raise Error(func, rc, _lib.pushprof_strerror(rc).decode("utf-8", "replace"))


def _enc(what, s):
    if not isinstance(s, str):
        raise TypeError("pushprof: label %s must be a str, got %s" % (what, type(s).__name__))
    b = s.encode("utf-8")
    if b"\0" in b:
        raise ValueError("pushprof: label %s %r contains a NUL character" % (what, s))
    return b


def _current():
    d = getattr(_tls, "labels", None)
    if d is None:
        d = _tls.labels = {}
    return d


def version():
    """The SDK's version string, e.g. "0.1.0"."""
    return _lib.pushprof_version().decode()


def start():
    """Starts profiling every thread, configured by the PUSHPROF_* variables
    (PUSHPROF_SOCKET, PUSHPROF_SERVICE, PUSHPROF_HZ, ...). The final profile
    is pushed at normal exit, or by stop()."""
    _check("pushprof_start", _lib.pushprof_start(None))


def stop():
    """Stops sampling and pushes (or writes) the final profile now."""
    _check("pushprof_stop", _lib.pushprof_stop())


def flush(timeout=2.0):
    """Pushes what has been sampled so far and waits for the sidecar's ack,
    at most timeout seconds."""
    ms = int(round(float(timeout) * 1000))
    if ms < 0:
        raise ValueError("pushprof: flush timeout must be >= 0 seconds, got %r" % timeout)
    _check("pushprof_flush", _lib.pushprof_flush(ms))


def set_label(key, value):
    """Sets key=value on the calling thread's samples; value None removes key."""
    k = _enc("key", key)
    v = None if value is None else _enc("value", value)
    _check("pushprof_label_set", _lib.pushprof_label_set(k, v))
    cur = _current()
    if value is None:
        cur.pop(key, None)
    else:
        cur[key] = value


def clear_labels():
    """Removes every label of the calling thread."""
    _check("pushprof_labels_clear", _lib.pushprof_labels_clear())
    _current().clear()


class labels:
    """with pushprof.labels(trace_id=..., route=...): the calling thread's
    samples carry these labels inside the block; on exit (normal or by an
    exception) the labels are what they were before. Nests."""

    def __init__(self, **kv):
        self._kv = kv
        self._saved = None

    def __enter__(self):
        cur = _current()
        saved = {k: cur.get(k) for k in self._kv}
        self._saved = saved
        try:
            for k, v in self._kv.items():
                set_label(k, v)
        except BaseException:
            self._restore()
            raise
        return self

    def _restore(self):
        saved, self._saved = self._saved, None
        err = None
        for k, v in saved.items():
            try:
                set_label(k, v)
            except Error as e:
                err = err or e
        if err is not None:
            raise err

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._restore()
            return False
        try:
            self._restore()
        except Error:
            pass  # the block's own exception is the one that matters
        return False
