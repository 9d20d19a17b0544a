"""Driven by it_example_python.sh: profiles itself through the binding and
dies of an uncaught exception; the SDK's exit push must still ship it."""
import time

import pushprof

pushprof.start()
with pushprof.labels(route="/doomed", trace_id="crash1"):
    end = time.thread_time() + 0.5
    x = 0
    while time.thread_time() < end:
        x = (x * 31 + 7) % 1000003
    raise RuntimeError("py_crash_app: failing on purpose")
