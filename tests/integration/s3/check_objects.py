"""Checks what the S3/GCS tests uploaded: lists the bucket (s3rver, anonymous
ListObjectsV2) or walks the GCS stand-in's directory, downloads every object,
checks its name (key charset, layout, hash prefix = SHA-256 of the bytes),
that each object was acknowledged exactly once (one 2xx answer the client
actually received per key; for GCS a 412 "already exists" counts), and that the testbed saw no rule violation.
Objects land in --download/<service>/ for go tool pprof."""
import argparse
import collections
import hashlib
import json
import os
import re
import sys
import urllib.request
import xml.etree.ElementTree as ET

NAME_RE = re.compile(r"^(?P<svc>[A-Za-z0-9._-]+)/\d{8}T\d{6}Z-(?P<h>[0-9a-f]{16})\.pb\.gz$")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--s3")
    p.add_argument("--gcs-dir")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--download", required=True)
    p.add_argument("--expect-services", default="")
    p.add_argument("--no-violations", action="store_true")
    p.add_argument("--role", default="s3")
    a = p.parse_args()
    errors = []
    recs = [json.loads(l) for l in open(a.log)]
    if a.no_violations:
        for r in recs:
            if "violation" in r:
                errors.append("testbed violation: %s on %s %s" % (r["violation"], r["method"],
                                                                  r["path"]))
    objects = {}
    if a.s3:
        url = "http://%s/%s?list-type=2&prefix=%s" % (a.s3, a.bucket, a.prefix)
        root = ET.fromstring(urllib.request.urlopen(url, timeout=10).read())
        ns = {"s": root.tag.split("}")[0].strip("{")} if root.tag.startswith("{") else {}
        keys = [e.text for e in root.iter() if e.tag.endswith("}Key") or e.tag == "Key"]
        for k in keys:
            objects[k] = urllib.request.urlopen("http://%s/%s/%s" % (a.s3, a.bucket, k),
                                                timeout=10).read()
        del ns
    else:
        base = os.path.join(a.gcs_dir, a.bucket)
        for d, _, files in os.walk(base):
            for f in files:
                full = os.path.join(d, f)
                k = os.path.relpath(full, base)
                if k.startswith(a.prefix):
                    objects[k] = open(full, "rb").read()
    if not objects:
        errors.append("no objects under %s/%s" % (a.bucket, a.prefix))
    acked = collections.Counter()
    for r in recs:
        if r.get("role") == a.role and r.get("method") in ("PUT", "POST") and r.get("key") and \
                (200 <= r.get("status", 0) < 300 or r.get("status") == 412) and \
                not r.get("fault") and \
                r.get("bucket") == a.bucket and r["key"].startswith(a.prefix):
            acked[r["key"]] += 1
    services = set()
    for k, data in sorted(objects.items()):
        if not re.match(r"^[A-Za-z0-9._~/-]+$", k):
            errors.append("key outside the charset: %r" % k)
        m = NAME_RE.match(k[len(a.prefix):])
        if not m:
            errors.append("key not PREFIX/<service>/<UTC>-<hash16>.pb.gz: %r" % k)
            continue
        h = hashlib.sha256(data).hexdigest()
        if h[:16] != m.group("h"):
            errors.append("%s: content hash %s does not match the name" % (k, h[:16]))
        if data[:2] != b"\x1f\x8b":
            errors.append("%s: not gzip" % k)
        if acked[k] != 1:
            errors.append("%s acknowledged %d times (want exactly 1)" % (k, acked[k]))
        services.add(m.group("svc"))
        d = os.path.join(a.download, m.group("svc"))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, os.path.basename(k)), "wb") as fh:
            fh.write(data)
    for k in acked:
        if k not in objects:
            errors.append("%s acknowledged but not stored" % k)
    for s in filter(None, a.expect_services.split(",")):
        if s not in services:
            errors.append("no object for service %s (have %s)" % (s, sorted(services)))
    for e in errors:
        print("check_objects: " + e, file=sys.stderr)
    print("check_objects: %d objects, %d services, %d errors" % (len(objects), len(services),
                                                                 len(errors)))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
