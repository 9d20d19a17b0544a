"""Driven by it_example_python.sh: uses the pushprof binding the way a
service would, and checks what the binding itself can check (errors,
arguments). The profile checks are done by the shell script.

Phases (CPU-bound pure Python, so the samples land in the interpreter):
  route=/outer               0.3 s  before
  route=/inner trace_id=t1   0.3 s  inside a nested labels() that raises
  route=/outer               0.6 s  after the exception (labels restored)
  thread: route=/worker      0.3 s  in another thread (labels are per thread)
"""
import sys
import threading
import time

import pushprof


def burn(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def main():
    # Errors carry the SDK's message and code.
    try:
        pushprof.set_label("", "x")
    except pushprof.Error as e:
        assert e.code == -1 and "invalid" in str(e).lower(), str(e)
        print("error text:", e)
    else:
        raise SystemExit("set_label('') did not raise")
    try:
        pushprof.stop()
    except pushprof.Error as e:
        assert e.code == -4, str(e)
    else:
        raise SystemExit("stop() before start() did not raise")

    pushprof.start()
    try:
        pushprof.start()
    except pushprof.Error as e:
        assert e.code == -3, str(e)
    else:
        raise SystemExit("a second start() did not raise")

    with pushprof.labels(route="/outer"):
        burn(0.3)
        try:
            with pushprof.labels(route="/inner", trace_id="t1"):
                burn(0.3)
                raise KeyError("boom")
        except KeyError:
            pass
        burn(0.6)

    def worker():
        with pushprof.labels(route="/worker"):
            burn(0.3)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    pushprof.flush(5)
    pushprof.stop()
    print("py_labels_app: done")


if __name__ == "__main__":
    sys.exit(main())
