"""bindings/python: pushprof.start()'s keyword options reach the SDK (each
checked in a fresh interpreter by the profile it writes or the error it
gets), bad ones are refused before the SDK sees them, and the module's
error-code names match pushprof.h. Run by it_sdk_python_options.sh."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import pushprof

SRC = os.environ["PUSHPROF_SOURCE_DIR"]
CHECK = [sys.executable, os.path.join(SRC, "tests/integration/pprof_check.py")]


def run_child(code):
    """Runs code in a fresh interpreter (profiling state is per process)."""
    prog = "import pushprof, sys\n" + code
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          timeout=60)


SPIN = "\nimport time\nt = time.process_time() + 0.4\nwhile time.process_time() < t: pass\n"


class Options(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "py-%p.pb.gz")

    def tearDown(self):
        self.dir.cleanup()

    def profile(self):
        files = [f for f in os.listdir(self.dir.name) if f.endswith(".pb.gz")]
        self.assertEqual(len(files), 1, files)
        return self.check(files[0])

    def run_preloaded(self, lib, prog, **env):
        """Runs prog in a new interpreter with only lib, beside the SDK, preloaded
        (the binding loads the SDK itself) and env added; the files in the test's
        directory after it, sorted."""
        lib = os.path.join(os.path.dirname(os.environ["PUSHPROF_LIBRARY"]), lib)
        r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, LD_PRELOAD=lib, **env))
        self.assertEqual(r.returncode, 0, r.stderr)
        return sorted(os.listdir(self.dir.name))

    def check(self, name, value=None):
        """pprof_check.py's summary of the profile name (read as value if given)."""
        r = subprocess.run(CHECK + (["--value", value] if value else []) +
                           [os.path.join(self.dir.name, name)], capture_output=True, text=True,
                           check=True)
        return json.loads(r.stdout)

    def test_hz_signal_and_output_path_are_honoured(self):
        r = run_child("import signal\npushprof.start(output_path=%r, hz=250, "
                      "signal_number=int(signal.SIGRTMIN) + 1, exit_timeout_ms=5000)"
                      % self.out + SPIN + "pushprof.stop()\nprint(int(signal.SIGRTMIN) + 1)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = self.profile()
        self.assertEqual(p["period"], 4000000)
        sig = r.stdout.strip()
        self.assertTrue(any(c.endswith("on signal " + sig) for c in p["comments"]), p["comments"])
        self.assertGreater(p["total"]["samples/count"], 50)

    def test_options_override_the_environment(self):
        env = dict(os.environ, PUSHPROF_HZ="50", PUSHPROF_OUTPUT="/nonexistent/never.pb.gz")
        prog = ("import pushprof\npushprof.start(output_path=%r, hz=200)" % self.out + SPIN +
                "pushprof.stop()\n")
        r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                           timeout=60, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.profile()["period"], 5000000)

    def test_socket_path_is_honoured(self):
        sock = os.path.join(self.dir.name, "none.sock")
        r = run_child("pushprof.start(socket_path=%r, exit_timeout_ms=300)\n" % sock +
                      "try:\n    pushprof.flush(1.0)\nexcept pushprof.Error as e:\n"
                      "    print(e.code == pushprof.EUNAVAILABLE)\n")
        self.assertEqual(r.stdout.strip(), "True", r.stdout + r.stderr)
        self.assertIn(sock, r.stderr)

    def test_flush_without_a_sidecar_is_estandalone(self):
        r = run_child("pushprof.start(output_path=%r)\n" % self.out +
                      "try:\n    pushprof.flush(1.0)\nexcept pushprof.Error as e:\n"
                      "    print(e.code == pushprof.ESTANDALONE, e)\npushprof.stop()\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("True "), r.stdout)
        self.assertIn("standalone", r.stdout)

    def test_bad_options_are_refused_before_the_sdk(self):
        for kw, exc in [(dict(hz="100"), TypeError), (dict(hz=True), TypeError),
                        (dict(hz=1.5), TypeError), (dict(hz=0), ValueError),
                        (dict(backlog=-1), ValueError), (dict(output_path=""), ValueError),
                        (dict(output_path="a\0b"), ValueError), (dict(service=3), TypeError),
                        (dict(handle_term_signals=1), TypeError), (dict(bogus=1), TypeError),
                        (dict(profiles=""), ValueError), (dict(profiles=1), TypeError),
                        (dict(heap_rate="1"), TypeError), (dict(heap_rate=0), ValueError)]:
            with self.assertRaises(exc, msg=repr(kw)):
                pushprof.start(**kw)
        with self.assertRaises(TypeError):
            pushprof.start(100)  # keyword-only

    def test_heap_profile_beside_cpu_when_preloaded(self):
        if os.environ.get("SAN_RUNTIME"):
            self.skipTest("a sanitizer's malloc comes first: heap profiling cannot run")
        out = os.path.join(self.dir.name, "py-%t.pb.gz")
        prog = ("import pushprof\npushprof.start(output_path=%r, profiles='cpu,heap', "
                "heap_rate=4096)\nkeep = [bytearray(100000) for _ in range(200)]\n"
                "junk = [bytearray(100000) for _ in range(800)]\ndel junk\n" % out + SPIN +
                "pushprof.stop()\n")
        files = self.run_preloaded("libpushprof_heap.so", prog, PYTHONMALLOC="malloc")
        self.assertEqual(files, ["py-cpu.pb.gz", "py-heap.pb.gz"])
        h = self.check("py-heap.pb.gz", "alloc_space/bytes")
        self.assertEqual(h["period"], 4096)
        # 1000 bytearrays of 100000 bytes allocated, 200 of them live at stop.
        self.assertGreater(h["total"]["alloc_space/bytes"], 0.9 * 1000 * 100000)
        self.assertGreater(h["total"]["inuse_space/bytes"], 0.9 * 200 * 100000)
        self.assertLess(h["total"]["inuse_space/bytes"], 2 * 200 * 100000)

    def test_offcpu_and_lock_profiles_when_the_wait_library_is_preloaded(self):
        if os.environ.get("SAN_RUNTIME"):
            self.skipTest("a sanitizer's interceptors come first: wait profiling cannot run")
        out = os.path.join(self.dir.name, "py-%t.pb.gz")
        prog = ("import pushprof, time\npushprof.start(output_path=%r, profiles='offcpu,lock')\n"
                "time.sleep(0.3)\npushprof.stop()\n" % out)
        files = self.run_preloaded("libpushprof_wait.so", prog)
        self.assertEqual(files, ["py-lock.pb.gz", "py-offcpu.pb.gz"])
        total = self.check("py-offcpu.pb.gz", "delay/nanoseconds")["total"]["delay/nanoseconds"]
        self.assertGreater(total, 0.25e9)  # the 0.3 s sleep
        self.assertLess(total, 5e9)

    def start_refused(self, profiles):
        """Starts profiles with nothing preloaded: EINVAL, and the reason on stderr."""
        r = run_child("try:\n    pushprof.start(output_path=%r, profiles=%r)\n"
                      "except pushprof.Error as e:\n    print(e.code == pushprof.EINVAL)\n"
                      % (self.out, profiles))
        self.assertEqual(r.stdout.strip(), "True", r.stdout + r.stderr)
        return r.stderr

    def test_waits_without_the_wait_library_are_refused(self):
        self.assertIn("libpushprof_wait.so", self.start_refused("offcpu"))

    def test_heap_without_the_preload_is_refused(self):
        err = self.start_refused("heap")
        self.assertIn("LD_PRELOAD", err)
        self.assertIn("libpushprof_heap.so", err)

    def test_values_the_sdk_refuses_raise_einval(self):
        with self.assertRaises(pushprof.Error) as cm:
            pushprof.start(hz=5000, output_path=self.out)
        self.assertEqual(cm.exception.code, pushprof.EINVAL)
        with self.assertRaises(pushprof.Error) as cm:
            pushprof.start(profiles="cpu,gpu", output_path=self.out)
        self.assertEqual(cm.exception.code, pushprof.EINVAL)
        with self.assertRaises(pushprof.Error) as cm:
            pushprof.stop()
        self.assertEqual(cm.exception.code, pushprof.ENOTSTARTED)


def ctypes_sizeof_options():
    import ctypes
    return ctypes.sizeof(pushprof._Options)


class Codes(unittest.TestCase):
    def test_code_names_match_the_header(self):
        h = open(os.path.join(SRC, "sdk/include/pushprof.h")).read()
        codes = dict((m.group(1), int(m.group(2))) for m in
                     re.finditer(r"#define PUSHPROF_(OK|E[A-Z]+) \(?(-?\d+)\)?", h))
        self.assertIn("ESTANDALONE", codes)
        for name, value in codes.items():
            self.assertEqual(getattr(pushprof, name), value, name)
            self.assertIn(name, pushprof.__all__)

    def test_options_layout_matches_the_header(self):
        self.assertEqual(pushprof._Options.hz.offset, 4)
        self.assertEqual(pushprof._Options.backlog.offset, 64)
        self.assertEqual(pushprof._Options.profiles.offset, 72)
        self.assertEqual(pushprof._Options.heap_rate.offset, 80)
        self.assertEqual(ctypes_sizeof_options(), 88)


if __name__ == "__main__":
    unittest.main(verbosity=2)
