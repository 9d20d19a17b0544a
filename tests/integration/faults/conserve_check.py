#!/usr/bin/env python3
"""The conservation check's verdict (it_conserve.sh). Reads what each job
pushed (the tap's frames), what the SDK says became of each push (the job's
stderr: nothing = acknowledged, else spooled or dropped with a reason), what
the tap saw the sidecar answer, and what reached the bucket (every object,
merged by `go tool pprof`, totals per job label from pprof_check.py) and,
with --files, what reached the sidecar's second target, a file:// directory
(the same rules, target by target), then prints the tally and exits 1 if
anything was lost, doubled or unaccounted on any target.

Rules:
  - every job exits 0 and its push was seen by the tap;
  - a push the SDK counts as acknowledged got an OK reply from the sidecar;
  - a job that took no sample sends a no_samples push (answered, not waited
    for: it carries nothing to lose) and no profile;
  - every acknowledged or spooled push is exported with exactly its samples;
  - a push the SDK dropped is exported with all its samples or none;
  - no job's samples are exported more than once; every object's name
    carries the SHA-256 of its bytes.
"""
import argparse
import collections
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conserve_pb  # noqa: E402

# What the C SDK writes to stderr about a push it could not deliver (sdk/push.c, sdk/api.c).
SDK_LINES = [
    ("spooled", re.compile(r"did not take \d+ profile\(s\) in time; written to its spool")),
    ("dropped:lost_at_exit", re.compile(r"profile\(s\) lost at exit")),
    ("dropped:refused", re.compile(r"refused a profile for good")),
    ("dropped:backlog_full", re.compile(r"dropped the profile of .* backlog full")),
    ("dropped:exit_timeout", re.compile(r"final profile was not written within")),
]


def exported_by_job(target, objs, a, errors):
    """Per job label, the samples of a target's objects [(name, bytes)],
    merged by go tool pprof; None holds the unlabelled ones."""
    exported = collections.Counter()
    paths = []
    for i, (k, data) in enumerate(objs):
        m = re.search(r"-([0-9a-f]{16})\.pb\.gz$", k)
        if not m or hashlib.sha256(data).hexdigest()[:16] != m.group(1):
            errors.append("%s object %s: name does not carry the SHA-256 of its bytes" % (target, k))
        gzip.decompress(data)
        path = os.path.join(a.download, "%s-%05d.pb.gz" % (target, i))
        open(path, "wb").write(data)
        paths.append(path)
    if not paths:
        errors.append("nothing exported to %s" % target)
        return exported
    merged = os.path.join(a.download, "%s-merged.pb" % target)
    with open(merged, "wb") as out:
        r = subprocess.run(["go", "tool", "pprof", "-proto", "-symbolize=none"] + paths,
                           stdout=out, stderr=subprocess.PIPE)
    if r.returncode != 0:
        errors.append("go tool pprof could not merge the %s objects: %s" % (target, r.stderr[-500:]))
        return exported
    r = subprocess.run([sys.executable, a.pprof_check, merged], capture_output=True, text=True)
    if r.returncode != 0:
        errors.append("pprof_check: %s" % r.stderr[-500:])
        return exported
    got = json.loads(r.stdout)
    exported.update({k: int(v) for k, v in got["labels"].get("job", {}).items()})
    labelled = sum(exported.values())
    exported[None] = int(sum(got["total"].values()) and list(got["total"].values())[0]) - labelled
    return exported


def judge(target, exported, expect, fate, unlabeled_pushed, jobs, errors):
    """The rules above for one target; the number of jobs whose samples
    arrived there exactly once."""
    exact = 0
    for n in range(1, jobs + 1):
        if n not in expect:
            continue
        want, got = expect[n], exported.get(str(n), 0)
        if got > want:
            errors.append("%s: job %d: %d samples exported, %d pushed (counted more than once)" %
                          (target, n, got, want))
        elif fate[n] in ("acked", "spooled") and got != want:
            errors.append("%s: job %d (%s): %d samples exported, %d pushed" %
                          (target, n, fate[n], got, want))
        elif fate[n].startswith("dropped") and got not in (0, want):
            errors.append("%s: job %d (%s): %d of %d samples exported" %
                          (target, n, fate[n], got, want))
        if got == want:
            exact += 1
    stray = [k for k in exported if k is not None and not (k.isdigit() and 1 <= int(k) <= jobs)]
    if stray:
        errors.append("%s: exported samples of unknown jobs: %s" % (target, stray[:5]))
    if exported.get(None, 0) > unlabeled_pushed:
        errors.append("%s: %d unlabelled samples exported, %d pushed" %
                      (target, exported.get(None, 0), unlabeled_pushed))
    return exact


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--jobs-dir", required=True)
    p.add_argument("--frames", required=True)
    p.add_argument("--tap-log", required=True)
    p.add_argument("--sidecar-logs", required=True, help="glob")
    p.add_argument("--tb-log", required=True)
    p.add_argument("--s3", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--download", required=True)
    p.add_argument("--pprof-check", required=True)
    p.add_argument("--files", help="a file:// target's directory, checked like the bucket")
    a = p.parse_args()
    errors = []

    # What was pushed: each job's frame (the same bytes on every attempt).
    frames = {}  # pid -> (job label totals)
    empty = collections.defaultdict(int)  # pid -> no_samples pushes
    for f in glob.glob(os.path.join(a.frames, "*.frame")):
        data = open(f, "rb").read()
        req = conserve_pb.push_request(data[12:])
        if req["no_samples"]:
            if req["pprof"]:
                errors.append("pid %d: a no_samples push carried a pprof" % req["pid"])
            empty[req["pid"]] += 1
            frames.setdefault(req["pid"], collections.Counter())
            continue
        frames.setdefault(req["pid"], collections.Counter()).update(
            conserve_pb.label_totals(req["pprof"], "job"))
    tap = collections.defaultdict(list)
    for line in open(a.tap_log):
        r = json.loads(line)
        tap[r["pid"]].append(r)

    # What the SDK says, job by job.
    fate, expect, pid_of = {}, {}, {}
    unlabeled_pushed = 0
    for n in range(1, a.jobs + 1):
        base = os.path.join(a.jobs_dir, str(n))
        rc = open(base + ".rc").read().strip() if os.path.exists(base + ".rc") else "?"
        if rc != "0":
            errors.append("job %d exited %s: %s" % (n, rc, open(base + ".err").read()[-300:]))
        err = open(base + ".err").read() if os.path.exists(base + ".err") else ""
        fate[n] = "acked"
        for name, rx in SDK_LINES:
            if rx.search(err):
                fate[n] = name
                break
        pid = int(open(base + ".pid").read().strip())
        pid_of[n] = pid
        if pid not in frames:
            errors.append("job %d (pid %d): the tap saw no push" % (n, pid))
            continue
        c = frames[pid]
        expect[n] = c.get(str(n), 0)
        unlabeled_pushed += c.get(None, 0)
        others = [k for k in c if k not in (str(n), None)]
        if others:
            errors.append("job %d pushed samples labelled job=%s" % (n, others))
        if fate[n] == "acked" and empty[pid] and not c:
            fate[n] = "empty"  # no sample taken: nothing to acknowledge
            continue
        if fate[n] == "acked" and not any(r.get("code") == 0 and r.get("delivered")
                                          for r in tap[pid]):
            errors.append("job %d: the SDK reported no failure, but no OK reply reached it" % n)

    # What reached the bucket, and the file target.
    url = "http://%s/%s?list-type=2&max-keys=100000&prefix=%s" % (a.s3, a.bucket, a.prefix)
    root = ET.fromstring(urllib.request.urlopen(url, timeout=30).read())
    keys = [e.text for e in root.iter() if e.tag.endswith("}Key") or e.tag == "Key"]
    if root.find(".//{*}IsTruncated") is not None and root.find(".//{*}IsTruncated").text == "true":
        errors.append("bucket listing truncated")
    os.makedirs(a.download, exist_ok=True)
    objects = [(k, urllib.request.urlopen("http://%s/%s/%s" % (a.s3, a.bucket, k),
                                          timeout=30).read()) for k in sorted(keys)]
    targets = [("s3", objects)]
    if a.files:
        files = sorted(glob.glob(os.path.join(a.files, "**", "*.pb.gz"), recursive=True))
        targets.append(("file", [(f, open(f, "rb").read()) for f in files]))
    exacts, npaths, exported = {}, {}, None
    for name, objs in targets:
        got = exported_by_job(name, objs, a, errors)
        npaths[name] = len(objs)
        exacts[name] = judge(name, got, expect, fate, unlabeled_pushed, a.jobs, errors)
        if name == "s3":
            exported = got
    exact = exacts["s3"]
    paths = range(npaths["s3"])
    tally = collections.Counter(fate[n] for n in range(1, a.jobs + 1))

    logs = sorted(glob.glob(a.sidecar_logs))
    text = "".join(open(f, errors="replace").read() for f in logs)
    faults = collections.Counter()
    for line in open(a.tb_log):
        r = json.loads(line)
        if r.get("fault"):
            faults[r["fault"]] += 1
    dropped = {k.split(":", 1)[1]: v for k, v in tally.items() if k.startswith("dropped")}
    no_reply = sum(1 for rs in tap.values() for r in rs if r.get("code") is None)
    print("conservation tally: pushed=%d acked=%d spooled=%d empty=%d dropped=%s exported=%d "
          "(jobs whose samples arrived exactly once; samples pushed=%d exported=%d)" % (
              a.jobs, tally["acked"], tally["spooled"], tally["empty"],
              json.dumps(dropped, sort_keys=True), exact,
              sum(expect.values()), sum(v for k, v in exported.items() if k is not None)))
    print("  faults: sidecar incarnations=%d (SIGKILLed %d), pushes cut off without a reply=%d, "
          "duplicate pushes deleted=%d, batches recovered from manifests=%d, objects=%d, "
          "backend faults=%s" % (
              len(logs), len(logs) - 1, no_reply, text.count('msg="duplicate push deleted"'),
              text.count('msg="pending batch recovered'), len(paths),
              json.dumps(dict(sorted(faults.items())))))
    if a.files:
        print("  file target: objects=%d, jobs whose samples arrived exactly once=%d" %
              (npaths["file"], exacts["file"]))
    for e in errors[:30]:
        print("FAIL: " + e, file=sys.stderr)
    if len(errors) > 30:
        print("FAIL: ... %d more" % (len(errors) - 30), file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
