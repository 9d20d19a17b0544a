#!/usr/bin/env python3
"""A TEST DOUBLE of Grafana Pyroscope's ingestion endpoints, for pushprof's
integration tests. It is not Pyroscope: it implements only what the sidecar
sends and checks every rule that Pyroscope's documented API and its
validation apply to such a request, so a request this double accepts is one
Pyroscope would accept. The rules and where they come from:

  push API  POST /push.v1.PusherService/Push  (api/push/v1/push.proto,
            Connect protocol, unary, binary protobuf)
    - Content-Type application/proto; Connect-Protocol-Version: 1
    - body = push.v1.PushRequest { repeated RawProfileSeries series = 1; }
      RawProfileSeries { repeated types.v1.LabelPair labels = 1;
                         repeated RawSample samples = 2;
                         repeated ProfileAnnotation annotations = 3; }
      RawSample { bytes raw_profile = 1; string ID = 2; }
      types.v1.LabelPair { string name = 1; string value = 2; }
      The field numbers below are typed in from those files, independently
      of proto/pyroscope_push.proto, so a wrong number there fails here.
    - labels (pkg/validation ValidateLabels): at least one; at most 30 names
      (max-label-names-per-series); names match [a-zA-Z_][a-zA-Z0-9_]*
      (Prometheus LabelName.IsValid), <= 1024 bytes; values valid UTF-8,
      <= 2048 bytes; no duplicate names; __name__ a valid metric name;
      service_name non-empty. Annotations are for distributors only.
    - RawSample.ID parses as a UUID (the ingester calls uuid.Parse).
    - raw_profile (its sample totals, as `go tool pprof -raw` lists them,
      are recorded for the test to compare): a pprof, gzip-compressed or not, at most 4 MiB
      uncompressed (validation.max-profile-size-bytes) and at most 16000
      samples (validation.max-profile-stacktrace-samples; ValidateProfile
      rejects more), checked by this double with `go tool pprof -raw` as an
      independent parser.
  ingest API  POST /ingest?name=APP{k=v,..}&from=S&until=S&format=pprof
    - multipart/form-data with a file field "profile" holding the pprof.
  both: X-Scope-OrgID when --tenant is given (multi-tenant mode), and the
  Authorization header (basic or bearer) when --basic/--bearer are given.

Violations are answered 400 with a Connect-style JSON error (like
Pyroscope's invalid_argument) and appended to OUT/violations.txt; the test
fails if that file is non-empty. Every request is logged to
OUT/requests.jsonl and each accepted profile saved as OUT/prof-N.pprof.

--fail CODES makes the first requests answer the given statuses in order
(e.g. 503,503 or 429); --always CODE answers every request with CODE.
--reject-older-than S refuses a push holding a profile whose time_nanos is
more than S seconds old the way Pyroscope's validation does (400
invalid_argument, "... is outside of ingestion window ..."; its
reject-older-than limit, 1h by default); that is not a violation.

Protobuf decoding: python3-protobuf is not on this image's Python, so the
double decodes the wire format itself (varint and length-delimited fields,
https://protobuf.dev/programming-guides/encoding/) against the schema above
and rejects unknown fields and wrong wire types.
"""
import argparse
import base64
import email.parser
import email.policy
import gzip
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pbwire  # noqa: E402
import standin  # noqa: E402

MAX_PROFILE = 4 << 20
MAX_SAMPLES = 16000
MAX_LABELS = 30
NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")

# message -> {field number: (name, wire type, nested message or None)}
SCHEMA = {
    "PushRequest": {1: ("series", 2, "RawProfileSeries")},
    "RawProfileSeries": {1: ("labels", 2, "LabelPair"), 2: ("samples", 2, "RawSample"),
                         3: ("annotations", 2, None)},
    "RawSample": {1: ("raw_profile", 2, None), 2: ("ID", 2, None)},
    "LabelPair": {1: ("name", 2, None), 2: ("value", 2, None)},
}


class Bad(Exception):
    pass


class TooOld(Exception):
    pass


def varint(buf, i):
    try:
        return pbwire.varint(buf, i)
    except ValueError as e:
        raise Bad(str(e))


def decode(buf, msg):
    """Returns {field name: [values]} with nested messages decoded."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if num not in SCHEMA[msg]:
            raise Bad(f"{msg}: unknown field {num}")
        name, want_wt, nested = SCHEMA[msg][num]
        if wt != want_wt:
            raise Bad(f"{msg}.{name}: wire type {wt}, want {want_wt}")
        n, i = varint(buf, i)
        if i + n > len(buf):
            raise Bad(f"{msg}.{name}: length {n} past the end")
        val = bytes(buf[i:i + n])
        i += n
        out.setdefault(name, []).append(decode(val, nested) if nested else val)
    return out


def top_fields(buf):
    """Yields (field number, varint value or None) for each top-level field
    of a protobuf message."""
    try:
        for num, wt, v in pbwire.fields(buf):
            yield num, v if wt == 0 else None
    except ValueError as e:
        raise Bad(f"the pprof: {e}")


def count_field(buf, field):
    """How often top-level field `field` occurs in a protobuf message."""
    return sum(1 for num, _ in top_fields(buf) if num == field)


def top_varint(buf, field):
    """The last value of top-level varint field `field` (0 if absent)."""
    val = 0
    for num, v in top_fields(buf):
        if num == field and v is not None:
            val = v
    return val


def text(b, what):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad(f"{what} is not valid UTF-8")


def check_labels(pairs):
    if not pairs:
        raise Bad("error at least one label pair is required per profile")
    if len(pairs) > MAX_LABELS:
        raise Bad(f"{len(pairs)} label names; limit {MAX_LABELS}")
    seen = {}
    for name, value in pairs:
        if len(name) > 1024:
            raise Bad(f"label name too long: {name[:40]}")
        if len(value.encode()) > 2048:
            raise Bad(f"label value too long for {name}")
        if not NAME_RE.match(name):
            raise Bad(f"invalid label name '{name}'")
        if name in seen:
            raise Bad(f"duplicate label name '{name}'")
        seen[name] = value
    if not METRIC_RE.match(seen.get("__name__", "")):
        raise Bad("invalid metric name (__name__)")
    if not seen.get("service_name"):
        raise Bad("service name is not provided")
    return seen


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.n_req = 0
        self.n_prof = 0
        self.fail = [int(x) for x in args.fail.split(",") if x] if args.fail else []


def check_profile(st, raw, where):
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    if len(data) > MAX_PROFILE:
        raise Bad(f"{where}: profile is {len(data)} bytes uncompressed, over {MAX_PROFILE}")
    nsamples = count_field(data, 2)  # Profile.sample = 2
    if nsamples > MAX_SAMPLES:
        raise Bad(f"{where}: {nsamples} samples, over {MAX_SAMPLES}")
    with st.lock:
        st.n_prof += 1
        path = os.path.join(st.args.out, f"prof-{st.n_prof:04d}.pprof")
    with open(path, "wb") as f:
        f.write(raw)
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    env.setdefault("GOCACHE", "/tmp/pushprof-gocache")
    r = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, env=env,
                       timeout=60)
    if r.returncode != 0 or b"Samples:" not in r.stdout:
        raise Bad(f"{where}: go tool pprof -raw rejects it: {r.stderr[:200]!r}")
    return path, len(data), nsamples, raw_totals(r.stdout.decode("utf-8", "replace"))


def raw_totals(out):
    """Sums of the first two sample values in `go tool pprof -raw` output."""
    inside, tot = False, [0, 0]
    for line in out.splitlines():
        if line.startswith("Samples:"):
            inside = True
        elif line.startswith(("Locations", "Mappings")):
            inside = False
        elif inside:
            m = re.match(r"^\s+(-?\d+)\s+(-?\d+):", line)
            if m:
                tot[0] += int(m.group(1))
                tot[1] += int(m.group(2))
    return tot


class Handler(standin.Handler):
    content_type = "application/proto"

    def check_auth(self):
        a = self.server.st.args
        if a.tenant is not None and self.headers.get("X-Scope-OrgID") != a.tenant:
            raise Bad(f"X-Scope-OrgID is {self.headers.get('X-Scope-OrgID')!r}, want the tenant")
        got = self.headers.get("Authorization")
        if a.basic:
            want = "Basic " + base64.b64encode(a.basic.encode()).decode()
            if got != want:
                raise Bad("missing or wrong basic auth")
        elif a.bearer:
            if got != "Bearer " + a.bearer:
                raise Bad("missing or wrong bearer token")
        elif got:
            raise Bad("unexpected Authorization header")

    def do_POST(self):
        st = self.server.st
        n = int(self.headers.get("Content-Length") or -1)
        if n < 0:
            self.reply(411, b"length required", "text/plain")
            return
        body = self.rfile.read(n)
        with st.lock:
            st.n_req += 1
            seq = st.n_req
            forced = st.fail.pop(0) if st.fail else st.args.always
        rec = {"seq": seq, "t": time.time(), "path": self.path, "bytes": n}
        if forced:
            rec["status"] = forced
            self.record(rec)
            extra = {"Retry-After": str(st.args.retry_after)} if forced == 429 else None
            self.reply(forced, json.dumps({"code": "unavailable", "message": "forced by test"})
                       .encode(), "application/json", extra)
            return
        try:
            self.check_auth()
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/push.v1.PusherService/Push":
                rec.update(self.push(body))
            elif url.path == "/ingest":
                rec.update(self.ingest(url, body))
            else:
                raise Bad(f"unknown path {url.path}")
        except TooOld as e:
            rec["status"] = 400
            rec["too_old"] = str(e)
            self.record(rec)
            self.reply(400, json.dumps({"code": "invalid_argument", "message": str(e)}).encode(),
                       "application/json")
            return
        except Bad as e:
            rec["status"] = 400
            rec["violation"] = str(e)
            self.record(rec)
            with open(os.path.join(st.args.out, "violations.txt"), "a") as f:
                f.write(f"request {seq} {self.path}: {e}\n")
            self.reply(400, json.dumps({"code": "invalid_argument", "message": str(e)}).encode(),
                       "application/json")
            return
        rec["status"] = 200
        self.record(rec)
        self.reply(200, b"")

    def record(self, rec):
        with self.server.st.lock:
            with open(os.path.join(self.server.st.args.out, "requests.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")

    def push(self, body):
        if self.headers.get("Content-Type") != "application/proto":
            raise Bad(f"Content-Type {self.headers.get('Content-Type')!r}, want application/proto")
        if self.headers.get("Connect-Protocol-Version") != "1":
            raise Bad("Connect-Protocol-Version: 1 missing")
        req = decode(body, "PushRequest")
        out = []
        for s in req.get("series", []):
            if s.get("annotations"):
                raise Bad("annotations are set by distributors only")
            pairs = [(text(l["name"][-1], "label name") if "name" in l else "",
                      text(l["value"][-1], "label value") if "value" in l else "")
                     for l in s.get("labels", [])]
            labels = check_labels(pairs)
            samples = []
            if not s.get("samples"):
                raise Bad("series without samples")
            for smp in s["samples"]:
                sid = text(smp.get("ID", [b""])[-1], "ID")
                try:
                    uuid.UUID(sid)
                except ValueError:
                    raise Bad(f"RawSample.ID {sid!r} is not a UUID")
                raw = smp.get("raw_profile", [b""])[-1]
                if self.server.st.args.reject_older_than:
                    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
                    t = top_varint(data, 9) / 1e9
                    if t < time.time() - self.server.st.args.reject_older_than:
                        raise TooOld("profile with labels '{service_name=\"%s\"}' is outside of "
                                     "ingestion window (profile timestamp: %s, the ingestion window "
                                     "starts at %s)" % (
                                         dict(pairs).get("service_name"),
                                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)),
                                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(
                                             time.time() - self.server.st.args.reject_older_than))))
                path, size, ns, tot = check_profile(self.server.st, raw, f"sample {sid}")
                samples.append({"id": sid, "file": path, "size": size, "samples": ns,
                                "totals": tot})
            out.append({"labels": labels, "samples": samples})
        if not out:
            raise Bad("request without series")
        return {"series": out}

    def ingest(self, url, body):
        q = urllib.parse.parse_qs(url.query, strict_parsing=True)
        for k in ("name", "from", "until", "format"):
            if len(q.get(k, [])) != 1:
                raise Bad(f"query parameter {k} missing or repeated")
        if q["format"][0] != "pprof":
            raise Bad("format is not pprof")
        frm, until = int(q["from"][0]), int(q["until"][0])
        if not (0 < frm <= until):
            raise Bad(f"from={frm} until={until}")
        m = re.match(r"^([^{}]+)(?:\{([^{}]*)\})?$", q["name"][0])
        if not m:
            raise Bad(f"name {q['name'][0]!r} is not APP{{k=v,...}}")
        labels = {}
        for kv in filter(None, (m.group(2) or "").split(",")):
            k, sep, v = kv.partition("=")
            if not sep or not NAME_RE.match(k):
                raise Bad(f"bad label {kv!r} in name")
            labels[k] = v
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("multipart/form-data"):
            raise Bad(f"Content-Type {ctype!r}, want multipart/form-data")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
        parts = {p.get_param("name", header="content-disposition"): p
                 for p in msg.iter_parts()} if msg.is_multipart() else {}
        if "profile" not in parts:
            raise Bad("no multipart field 'profile'")
        raw = parts["profile"].get_payload(decode=True)
        path, size, ns, tot = check_profile(self.server.st, raw, "ingest profile")
        return {"app": m.group(1), "labels": labels, "from": frm, "until": until,
                "spyName": q.get("spyName", [""])[0], "sampleRate": q.get("sampleRate", [""])[0],
                "samples": [{"file": path, "size": size, "samples": ns, "totals": tot}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--tenant")
    ap.add_argument("--basic", help="USER:PASSWORD expected")
    ap.add_argument("--bearer", help="token expected")
    ap.add_argument("--fail", default="", help="statuses for the first requests, e.g. 503,503")
    ap.add_argument("--always", type=int, default=0, help="answer every request with this")
    ap.add_argument("--reject-older-than", type=int, default=0,
                    help="refuse profiles older than this many seconds, as Pyroscope does")
    ap.add_argument("--retry-after", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.st = State(args)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
