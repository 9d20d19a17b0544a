"""pushprof for Python: a thin ctypes wrapper over libpushprof.

No build step. The library loaded is the one named by PUSHPROF_LIBRARY (a
path), else libpushprof.so through the system loader (LD_LIBRARY_PATH,
ldconfig paths).

    import pushprof
    pushprof.start()                    # settings from PUSHPROF_* variables
    pushprof.start(socket_path="/run/pushprof/pushprof.sock", service="billing")
    with pushprof.labels(trace_id="abc123", route="/checkout"):
        handle_request()
    pushprof.stop()                     # final push (also done at exit)

Every failure raises pushprof.Error whose message is the SDK's own
(pushprof_strerror) and whose .code is the PUSHPROF_E* number, also
available here by name (pushprof.EINVAL, pushprof.ESTANDALONE, ...).

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

__all__ = ["Error", "start", "stop", "flush", "set_label", "clear_labels", "labels", "version",
           "OK", "EINVAL", "ENOMEM", "EALREADY", "ENOTSTARTED", "ESYS", "ECONFIG", "ELIMIT",
           "ETIMEDOUT", "EREFUSED", "EUNAVAILABLE", "ESETUID", "ESTANDALONE"]

# The PUSHPROF_E* codes of pushprof.h (never renumbered).
OK = 0
EINVAL = -1
ENOMEM = -2
EALREADY = -3
ENOTSTARTED = -4
ESYS = -5
ECONFIG = -6
ELIMIT = -7
ETIMEDOUT = -8
EREFUSED = -9
EUNAVAILABLE = -10
ESETUID = -11
ESTANDALONE = -12


class Error(Exception):
    """A pushprof call failed; .code is the SDK's error code (negative)."""

    def __init__(self, func, code, message):
        super().__init__("%s: %s" % (func, message))
        self.func = func
        self.code = code


class _Options(ctypes.Structure):
    """pushprof_options as pushprof.h lays it out (struct_size tagged with
    this layout's size, so any newer library reads it correctly)."""
    _fields_ = [
        ("struct_size", ctypes.c_uint),
        ("hz", ctypes.c_int),
        ("service", ctypes.c_char_p),
        ("output_path", ctypes.c_char_p),
        ("signal_number", ctypes.c_int),
        ("socket_path", ctypes.c_char_p),
        ("upload_period_s", ctypes.c_int),
        ("exit_timeout_ms", ctypes.c_int),
        ("handle_term_signals", ctypes.c_int),
        ("spool_dir", ctypes.c_char_p),
        ("backlog", ctypes.c_int),
        ("reserved0", ctypes.c_int),
        ("profiles", ctypes.c_char_p),
        ("heap_rate", ctypes.c_longlong),
    ]


_OPTIONS_TAG = 0x70700000  # PUSHPROF_OPTIONS_TAG
_INT_OPTIONS = ("hz", "signal_number", "upload_period_s", "exit_timeout_ms", "backlog")
_STR_OPTIONS = ("service", "output_path", "socket_path", "spool_dir", "profiles")


def _load():
    path = os.environ.get("PUSHPROF_LIBRARY") or "libpushprof.so"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "pushprof: cannot load %s (%s): set PUSHPROF_LIBRARY to the path of "
            "libpushprof.so, or install it where the loader finds it" % (path, e)) from None
    sigs = {
        "pushprof_start": ([ctypes.POINTER(_Options)], ctypes.c_int),
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


def _options(kw):
    """A _Options from start()'s keyword arguments, checked for type; the
    SDK checks the values (ranges, paths) and says why on stderr."""
    o = _Options()
    o.struct_size = _OPTIONS_TAG | ctypes.sizeof(_Options)
    for name, v in kw.items():
        if v is None:
            continue
        if name in _INT_OPTIONS:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("pushprof: %s must be an int, got %s" % (name, type(v).__name__))
            if not 1 <= v <= 2**31 - 1:
                raise ValueError("pushprof: %s must be a positive int (None: from the "
                                 "environment, else the default), got %r" % (name, v))
            setattr(o, name, int(v))
        elif name == "heap_rate":
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("pushprof: heap_rate must be an int, got %s" % type(v).__name__)
            if not 1 <= v <= 2**63 - 1:
                raise ValueError("pushprof: heap_rate must be a positive int (None: from the "
                                 "environment, else the default), got %r" % (v,))
            o.heap_rate = int(v)
        elif name in _STR_OPTIONS:
            if isinstance(v, os.PathLike):
                v = os.fspath(v)
            if isinstance(v, str):
                b = v.encode("utf-8")
            elif isinstance(v, bytes):
                b = v
            else:
                raise TypeError("pushprof: %s must be a str, bytes or path, got %s"
                                % (name, type(v).__name__))
            if not b or b"\0" in b:
                raise ValueError("pushprof: %s must be non-empty without NUL characters, got %r"
                                 % (name, v))
            setattr(o, name, b)
        elif name == "handle_term_signals":
            if not isinstance(v, bool):
                raise TypeError("pushprof: handle_term_signals must be a bool, got %s"
                                % type(v).__name__)
            o.handle_term_signals = int(v)
    return o


def start(*, hz=None, service=None, output_path=None, signal_number=None, socket_path=None,
          upload_period_s=None, exit_timeout_ms=None, handle_term_signals=None, spool_dir=None,
          backlog=None, profiles=None, heap_rate=None):
    """Starts profiling every thread. Each option left None comes from its
    PUSHPROF_* variable, else the default (the names and ranges are those of
    pushprof_options and the variables: hz PUSHPROF_HZ, socket_path
    PUSHPROF_SOCKET, output_path PUSHPROF_OUTPUT, ...). A wrong type raises
    TypeError, a value that cannot mean anything (0, negative, empty, NUL)
    ValueError, a value the SDK refuses Error (code EINVAL; its reason is on
    stderr). The final profile is pushed at normal exit, or by stop().
    profiles (PUSHPROF_PROFILES) is a comma list of cpu, heap, offcpu and
    lock; "cpu,heap" adds heap profiling, which needs
    libpushprof_heap.so preloaded (LD_PRELOAD) so that its interposers are
    the process's malloc; heap_rate (PUSHPROF_HEAP_RATE) is the mean bytes between
    samples. offcpu and lock need libpushprof_wait.so preloaded the same way."""
    kw = dict(hz=hz, service=service, output_path=output_path, signal_number=signal_number,
              socket_path=socket_path, upload_period_s=upload_period_s,
              exit_timeout_ms=exit_timeout_ms, handle_term_signals=handle_term_signals,
              spool_dir=spool_dir, backlog=backlog, profiles=profiles, heap_rate=heap_rate)
    opts = _options(kw)
    _check("pushprof_start", _lib.pushprof_start(ctypes.byref(opts)))


def stop():
    """Stops sampling and pushes (or writes) the final profile now."""
    _check("pushprof_stop", _lib.pushprof_stop())


def flush(timeout=2.0):
    """Pushes what has been sampled so far and waits for the sidecar's ack,
    at most timeout seconds. Without a sidecar (output_path only) it raises
    Error with code ESTANDALONE."""
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
