#!/usr/bin/python3
"""A strict OTLP/HTTP profiles receiver for pushprof's integration tests: a
test double of an OpenTelemetry Collector's otlphttp receiver that decodes
every request with Google's protobuf runtime (Debian's python3-protobuf)
against a schema typed in here from opentelemetry-proto's published files
(profiles/v1development/profiles.proto, collector/profiles/v1development/
profiles_service.proto, common/v1/common.proto, resource/v1/resource.proto),
independently of pushprof's proto/otlp_profiles.proto, so a wrong field
number or type there shows up here as an unknown field or a bad value.

What it checks, per request (a violation answers 400 with a google.rpc.Status
and goes to OUT/violations.txt; the test fails if that file is non-empty):
  - POST to --path (default /v1development/profiles); Content-Type
    application/x-protobuf; Content-Encoding gzip and a gzip body;
    every --expect-header NAME=VALUE present with that value
  - the body decodes as ExportProfilesServiceRequest with no unknown field
    anywhere (nothing outside the upstream schema)
  - dictionary: entry 0 of every table present and the zero value
    (string_table[0] == "", link_table[0] = 16 + 8 zero bytes or empty)
  - every index (strindex, stack, location, mapping, function, attribute,
    link) in range; attribute keys unique within each attribute list
  - each Profile: a sample_type; every sample exactly one value and no
    timestamps (pushprof's shape); samples unique by (stack, attributes, link);
    profile_id 16 bytes, not all zero
  - links other than 0: 16-byte trace id and 8-byte span id, not zero, equal
    to the sample's trace_id/span_id attributes (hex)
  - resource: service.name present, keys unique
Each request is logged to OUT/requests.jsonl: status, headers seen, and per
profile the resource attributes, sample type, total, per-stack totals
("f_leaf;...;f_root|k=v,..." with string attributes), link count and the
mappings' build ids; the test compares those with go tool pprof -raw of what
was pushed.

Answers: --fail 503,429 answers the first requests with those statuses (a
429/503 carries Retry-After: --retry-after); --always CODE answers all;
--partial N answers 200 with partial_success.rejected_profiles = N.
Run with Debian's /usr/bin/python3 (pyenv's python has no protobuf).
"""
import argparse
import gzip
import http.server
import json
import os
import sys
import threading
import time

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import standin  # noqa: E402

FD = descriptor_pb2.FieldDescriptorProto
T = {"string": FD.TYPE_STRING, "bool": FD.TYPE_BOOL, "int64": FD.TYPE_INT64,
     "double": FD.TYPE_DOUBLE, "bytes": FD.TYPE_BYTES, "int32": FD.TYPE_INT32,
     "uint32": FD.TYPE_UINT32, "uint64": FD.TYPE_UINT64, "fixed64": FD.TYPE_FIXED64}

# message: [(field, number, type or message, repeated, oneof)]
SCHEMA = {
    "AnyValue": [("string_value", 1, "string", False, "value"), ("bool_value", 2, "bool", False, "value"),
                 ("int_value", 3, "int64", False, "value"), ("double_value", 4, "double", False, "value"),
                 ("array_value", 5, "ArrayValue", False, "value"),
                 ("kvlist_value", 6, "KeyValueList", False, "value"),
                 ("bytes_value", 7, "bytes", False, "value"),
                 ("string_value_strindex", 8, "int32", False, "value")],
    "ArrayValue": [("values", 1, "AnyValue", True, None)],
    "KeyValueList": [("values", 1, "KeyValue", True, None)],
    "KeyValue": [("key", 1, "string", False, None), ("value", 2, "AnyValue", False, None),
                 ("key_strindex", 3, "int32", False, None)],
    "InstrumentationScope": [("name", 1, "string", False, None), ("version", 2, "string", False, None),
                             ("attributes", 3, "KeyValue", True, None),
                             ("dropped_attributes_count", 4, "uint32", False, None)],
    "EntityRef": [("schema_url", 1, "string", False, None), ("type", 2, "string", False, None),
                  ("id_keys", 3, "string", True, None), ("description_keys", 4, "string", True, None)],
    "Resource": [("attributes", 1, "KeyValue", True, None),
                 ("dropped_attributes_count", 2, "uint32", False, None),
                 ("entity_refs", 3, "EntityRef", True, None)],
    "ProfilesDictionary": [("mapping_table", 1, "Mapping", True, None),
                           ("location_table", 2, "Location", True, None),
                           ("function_table", 3, "Function", True, None),
                           ("link_table", 4, "Link", True, None),
                           ("string_table", 5, "string", True, None),
                           ("attribute_table", 6, "KeyValueAndUnit", True, None),
                           ("stack_table", 7, "Stack", True, None)],
    "ResourceProfiles": [("resource", 1, "Resource", False, None),
                         ("scope_profiles", 2, "ScopeProfiles", True, None),
                         ("schema_url", 3, "string", False, None)],
    "ScopeProfiles": [("scope", 1, "InstrumentationScope", False, None),
                      ("profiles", 2, "Profile", True, None), ("schema_url", 3, "string", False, None)],
    "Profile": [("sample_type", 1, "ValueType", False, None), ("samples", 2, "Sample", True, None),
                ("time_unix_nano", 3, "fixed64", False, None), ("duration_nano", 4, "uint64", False, None),
                ("period_type", 5, "ValueType", False, None), ("period", 6, "int64", False, None),
                ("profile_id", 7, "bytes", False, None),
                ("dropped_attributes_count", 8, "uint32", False, None),
                ("original_payload_format", 9, "string", False, None),
                ("original_payload", 10, "bytes", False, None),
                ("attribute_indices", 11, "int32", True, None)],
    "Link": [("trace_id", 1, "bytes", False, None), ("span_id", 2, "bytes", False, None)],
    "ValueType": [("type_strindex", 1, "int32", False, None), ("unit_strindex", 2, "int32", False, None)],
    "Sample": [("stack_index", 1, "int32", False, None), ("attribute_indices", 2, "int32", True, None),
               ("link_index", 3, "int32", False, None), ("values", 4, "int64", True, None),
               ("timestamps_unix_nano", 5, "fixed64", True, None)],
    "Mapping": [("memory_start", 1, "uint64", False, None), ("memory_limit", 2, "uint64", False, None),
                ("file_offset", 3, "uint64", False, None), ("filename_strindex", 4, "int32", False, None),
                ("attribute_indices", 5, "int32", True, None)],
    "Stack": [("location_indices", 1, "int32", True, None)],
    "Location": [("mapping_index", 1, "int32", False, None), ("address", 2, "uint64", False, None),
                 ("lines", 3, "Line", True, None), ("attribute_indices", 4, "int32", True, None)],
    "Line": [("function_index", 1, "int32", False, None), ("line", 2, "int64", False, None),
             ("column", 3, "int64", False, None)],
    "Function": [("name_strindex", 1, "int32", False, None),
                 ("system_name_strindex", 2, "int32", False, None),
                 ("filename_strindex", 3, "int32", False, None), ("start_line", 4, "int64", False, None)],
    "KeyValueAndUnit": [("key_strindex", 1, "int32", False, None), ("value", 2, "AnyValue", False, None),
                        ("unit_strindex", 3, "int32", False, None)],
    "ExportProfilesServiceRequest": [("resource_profiles", 1, "ResourceProfiles", True, None),
                                     ("dictionary", 2, "ProfilesDictionary", False, None)],
    "ExportProfilesServiceResponse": [("partial_success", 1, "ExportProfilesPartialSuccess", False, None)],
    "ExportProfilesPartialSuccess": [("rejected_profiles", 1, "int64", False, None),
                                     ("error_message", 2, "string", False, None)],
    "Status": [("code", 1, "int32", False, None), ("message", 2, "string", False, None)],
}


def build_messages():
    f = descriptor_pb2.FileDescriptorProto(name="otlp_test.proto", package="otlptest", syntax="proto3")
    for name, fields in SCHEMA.items():
        m = f.message_type.add(name=name)
        oneofs = []
        for fname, num, typ, rep, oneof in fields:
            fd = m.field.add(name=fname, number=num,
                             label=FD.LABEL_REPEATED if rep else FD.LABEL_OPTIONAL)
            if typ in T:
                fd.type = T[typ]
            else:
                fd.type = FD.TYPE_MESSAGE
                fd.type_name = ".otlptest." + typ
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    m.oneof_decl.add(name=oneof)
                fd.oneof_index = oneofs.index(oneof)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    fac = message_factory.MessageFactory(pool)
    return {n: fac.GetPrototype(pool.FindMessageTypeByName("otlptest." + n)) for n in SCHEMA}


M = build_messages()


class Violation(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Violation(what)


def no_unknown(msg, path="request"):
    check(len(msg.UnknownFields()) == 0, "%s holds fields outside the upstream schema" % path)
    for fd, val in msg.ListFields():
        if fd.type == FD.TYPE_MESSAGE:
            items = val if fd.label == FD.LABEL_REPEATED else [val]
            for i, v in enumerate(items[:2000]):
                no_unknown(v, "%s.%s[%d]" % (path, fd.name, i))


def any_value(v, strings):
    k = v.WhichOneof("value")
    if k == "string_value":
        return v.string_value
    if k == "int_value":
        return v.int_value
    if k == "string_value_strindex":
        return strings[v.string_value_strindex]
    if k is None:
        return None
    return str(getattr(v, k))


def validate(req):
    """Checks req; returns the per-profile records to log."""
    no_unknown(req)
    check(req.HasField("dictionary"), "no dictionary")
    d = req.dictionary
    S = list(d.string_table)
    tables = [("string_table", S), ("mapping_table", d.mapping_table),
              ("location_table", d.location_table), ("function_table", d.function_table),
              ("link_table", d.link_table), ("attribute_table", d.attribute_table),
              ("stack_table", d.stack_table)]
    for name, t in tables:
        check(len(t) >= 1, "%s has no entry 0" % name)
    check(S[0] == "", "string_table[0] is %r, not \"\"" % S[0])
    for name, t in tables[1:]:
        e = t[0]
        if name == "link_table":
            check(e.trace_id in (b"", bytes(16)) and e.span_id in (b"", bytes(8)),
                  "link_table[0] is not the zero link")
        else:
            check(e.SerializeToString() == b"", "%s[0] is not the zero value" % name)

    def sx(i, what):
        check(0 <= i < len(S), "%s string index %d out of range (%d strings)" % (what, i, len(S)))
        return S[i]

    def ix(i, table, what):
        check(0 <= i < len(table), "%s index %d out of range (%d entries)" % (what, i, len(table)))
        return i

    def attr_list(indices, what):
        keys, out = set(), {}
        for a in indices:
            ix(a, d.attribute_table, what + " attribute")
            check(a != 0, "%s references attribute 0 (the zero value)" % what)
            kv = d.attribute_table[a]
            key = sx(kv.key_strindex, what + " attribute key")
            sx(kv.unit_strindex, what + " attribute unit")
            check(key not in keys, "%s repeats attribute key %r" % (what, key))
            keys.add(key)
            out[key] = any_value(kv.value, S)
        return out

    for i, m in enumerate(d.mapping_table):
        sx(m.filename_strindex, "mapping %d filename" % i)
        attr_list(m.attribute_indices, "mapping %d" % i)
    for i, f in enumerate(d.function_table):
        for fld in ("name_strindex", "system_name_strindex", "filename_strindex"):
            sx(getattr(f, fld), "function %d %s" % (i, fld))
    for i, loc in enumerate(d.location_table):
        ix(loc.mapping_index, d.mapping_table, "location %d mapping" % i)
        for ln in loc.lines:
            ix(ln.function_index, d.function_table, "location %d line function" % i)
    for i, st in enumerate(d.stack_table):
        for li in st.location_indices:
            ix(li, d.location_table, "stack %d location" % i)
    for i, ln in enumerate(d.link_table[1:], 1):
        check(len(ln.trace_id) == 16 and ln.trace_id != bytes(16), "link %d trace_id bad" % i)
        check(len(ln.span_id) == 8 and ln.span_id != bytes(8), "link %d span_id bad" % i)

    def fn_names(loc_index):
        loc = d.location_table[loc_index]
        if not loc.lines:
            return ["0x%x" % loc.address]
        return [S[d.function_table[ln.function_index].name_strindex] or "0x%x" % loc.address
                for ln in loc.lines]

    records = []
    check(len(req.resource_profiles) >= 1, "no resource_profiles")
    for rp in req.resource_profiles:
        res = {}
        for kv in rp.resource.attributes:
            check(kv.key not in res, "resource repeats key %r" % kv.key)
            res[kv.key] = any_value(kv.value, S)
        check(res.get("service.name"), "resource has no service.name")
        for sp in rp.scope_profiles:
            for pi, p in enumerate(sp.profiles):
                what = "profile %d" % pi
                check(p.HasField("sample_type"), what + " has no sample_type")
                typ = "%s/%s" % (sx(p.sample_type.type_strindex, what + " type"),
                                 sx(p.sample_type.unit_strindex, what + " unit"))
                check(len(p.profile_id) == 16 and p.profile_id != bytes(16),
                      what + " profile_id is not 16 non-zero bytes")
                if p.HasField("period_type"):
                    sx(p.period_type.type_strindex, what + " period type")
                    sx(p.period_type.unit_strindex, what + " period unit")
                attr_list(p.attribute_indices, what)
                seen, stacks, total, links = set(), {}, 0, 0
                for si, s in enumerate(p.samples):
                    sw = "%s sample %d" % (what, si)
                    check(len(s.values) == 1, "%s has %d values, want 1" % (sw, len(s.values)))
                    check(len(s.timestamps_unix_nano) == 0, sw + " has timestamps")
                    ix(s.stack_index, d.stack_table, sw + " stack")
                    ix(s.link_index, d.link_table, sw + " link")
                    attrs = attr_list(s.attribute_indices, sw)
                    ident = (s.stack_index, tuple(sorted(s.attribute_indices)), s.link_index)
                    check(ident not in seen, sw + " repeats another sample's identity")
                    seen.add(ident)
                    if s.link_index:
                        links += 1
                        ln = d.link_table[s.link_index]
                        check(attrs.get("trace_id", "").lower() == ln.trace_id.hex(),
                              "%s link trace id %s differs from its trace_id attribute %r"
                              % (sw, ln.trace_id.hex(), attrs.get("trace_id")))
                        check(attrs.get("span_id", "").lower() == ln.span_id.hex(),
                              "%s link span id differs from its span_id attribute" % sw)
                    else:
                        t, sp_ = attrs.get("trace_id"), attrs.get("span_id")
                        valid = (isinstance(t, str) and isinstance(sp_, str) and len(t) == 32
                                 and len(sp_) == 16 and all(c in "0123456789abcdefABCDEF" for c in t + sp_)
                                 and int(t, 16) != 0 and int(sp_, 16) != 0)
                        check(not valid, sw + " has valid trace_id/span_id attributes but no link")
                    fns = []
                    for li in d.stack_table[s.stack_index].location_indices:
                        fns.extend(fn_names(li))
                    labels = ",".join("%s=%s" % (k, v) for k, v in sorted(attrs.items())
                                      if isinstance(v, str))
                    key = ";".join(fns) + "|" + labels
                    stacks[key] = stacks.get(key, 0) + s.values[0]
                    total += s.values[0]
                build_ids = sorted({str(v) for m in d.mapping_table
                                    for k, v in attr_list(m.attribute_indices, "mapping").items()
                                    if k == "process.executable.build_id.gnu"})
                num_keys = sorted({S[kv.key_strindex] for kv in d.attribute_table[1:]
                                   if kv.value.WhichOneof("value") == "int_value"})
                records.append({"resource": res, "scope": sp.scope.name, "type": typ,
                                "period": p.period, "samples": len(p.samples), "total": total,
                                "links": links, "stacks": stacks, "build_ids": build_ids,
                                "numeric_label_keys": num_keys, "time": p.time_unix_nano})
    return records


class State:
    lock = threading.Lock()
    n = 0


def make_handler(args):
    plan = [int(c) for c in args.fail.split(",") if c] if args.fail else []

    class H(standin.Handler):
        content_type = "application/x-protobuf"

        def status_body(self, code, msg):
            st = M["Status"](code=code, message=msg)
            return st.SerializeToString()

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with State.lock:
                k = State.n
                State.n += 1
            rec = {"t": time.time(), "path": self.path,
                   "headers": {h: self.headers[h] for h in ("Content-Type", "Content-Encoding")}}
            for spec in args.expect_header:
                name = spec.split("=", 1)[0]
                rec["headers"][name] = "present" if self.headers.get(name) is not None else "absent"
            status, out, extra = 200, b"", {}
            if k < len(plan) or args.always:
                status = plan[k] if k < len(plan) else args.always
                if status in (429, 503) and args.retry_after:
                    extra["Retry-After"] = str(args.retry_after)
                out = self.status_body(3 if status == 400 else 14, "stand-in says %d" % status)
            else:
                try:
                    check(self.path == args.path, "path %s, want %s" % (self.path, args.path))
                    check(self.headers.get("Content-Type") == "application/x-protobuf",
                          "Content-Type %r" % self.headers.get("Content-Type"))
                    check(self.headers.get("Content-Encoding") == "gzip",
                          "Content-Encoding %r" % self.headers.get("Content-Encoding"))
                    for spec in args.expect_header:
                        name, want = spec.split("=", 1)
                        check(self.headers.get(name) == want, "header %s missing or wrong" % name)
                    try:
                        raw = gzip.decompress(body)
                    except Exception as e:
                        raise Violation("body is not gzip: %s" % e)
                    req = M["ExportProfilesServiceRequest"]()
                    try:
                        req.ParseFromString(raw)
                    except Exception as e:
                        raise Violation("body does not decode: %s" % e)
                    rec["profiles"] = validate(req)
                    rec["wire_bytes"] = len(body)
                    rec["raw_bytes"] = len(raw)
                    if args.partial:
                        ps = M["ExportProfilesPartialSuccess"](rejected_profiles=args.partial,
                                                               error_message="stand-in rejects some")
                        out = M["ExportProfilesServiceResponse"](partial_success=ps).SerializeToString()
                except Violation as v:
                    status = 400
                    out = self.status_body(3, "violation: %s" % v)
                    with open(os.path.join(args.out, "violations.txt"), "a") as f:
                        f.write("%s\n" % v)
            rec["status"] = status
            with State.lock:
                with open(os.path.join(args.out, "requests.jsonl"), "a") as f:
                    f.write(json.dumps(rec) + "\n")
            self.reply(status, out, extra=extra)

    return H


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--path", default="/v1development/profiles")
    ap.add_argument("--expect-header", action="append", default=[])
    ap.add_argument("--fail", default="")
    ap.add_argument("--always", type=int, default=0)
    ap.add_argument("--retry-after", type=int, default=0)
    ap.add_argument("--partial", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args))
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
