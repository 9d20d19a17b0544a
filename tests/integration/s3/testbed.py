"""Test doubles for the sidecar's S3 and GCS exporters, all in one process so
they share the credentials they hand out. Each role listens on its own
loopback port; the ports go to --ports-file as JSON once all are up.

  s3    SigV4-verifying reverse proxy in front of a real S3-compatible server
        (s3rver): recomputes every request's signature (sigv4.py), checks the
        upload rules (Content-Length, no chunking, no empty headers, key
        charset, session tokens, expiry), optionally injects faults, then
        forwards the request, unsigned, to --upstream.
  sts   AssumeRoleWithWebIdentity stand-in: checks RoleArn and that the token
        is the current content of --web-identity-token-file; hands out
        credentials living --cred-lifetime seconds.
  pod   EKS Pod Identity agent stand-in (AWS_CONTAINER_CREDENTIALS_FULL_URI):
        checks the Authorization header against --pod-token-file.
  meta  GCE metadata server stand-in: token endpoint, Metadata-Flavor: Google.
  gcs   GCS JSON API simple-upload stand-in (uploadType=media,
        ifGenerationMatch=0 -> 412 if the object exists); stores in --gcs-dir.

These are doubles: what they check comes from the documented APIs. Every
request goes to --log as one JSON line; failed checks have "violation".
"""
import argparse
import hashlib
import http.client
import http.server
import json
import os
import random
import re
import secrets
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sigv4  # noqa: E402
import standin  # noqa: E402

KEY_RE = re.compile(r"^[A-Za-z0-9._~/-]+$")
LOCK = threading.Lock()
CREDS = {}        # akid -> (secret, token or None, expiry or None)
BEARER = {}       # token -> expiry
STATE = {"first_upload": None, "fault_i": 0, "sts_calls": 0, "pod_calls": 0, "meta_calls": 0}
ARGS = None
LOGF = None
RNG = random.Random()


def log(rec):
    rec["t"] = time.time()
    line = json.dumps(rec, sort_keys=True)
    with LOCK:
        LOGF.write(line + "\n")
        LOGF.flush()


def sentinel_secret(kind):
    return "%s-%s-%s" % (ARGS.sentinel, kind, secrets.token_hex(8))


def next_fault(role):
    """The fault for this upload, or None once the fault window is over.
    Faults come in turn, or with --fault-rate at random (seeded) until
    --fault-stop-file exists."""
    if not ARGS.faults or role not in ARGS.fault_roles.split(","):
        return None
    with LOCK:
        now = time.time()
        if ARGS.fault_rate > 0:
            if ARGS.fault_stop_file and os.path.exists(ARGS.fault_stop_file):
                return None
            if RNG.random() >= ARGS.fault_rate:
                return None
            return RNG.choice(ARGS.faults)
        if STATE["first_upload"] is None:
            STATE["first_upload"] = now
        if now - STATE["first_upload"] > ARGS.fault_seconds:
            return None
        f = ARGS.faults[STATE["fault_i"] % len(ARGS.faults)]
        STATE["fault_i"] += 1
        return f


def reset_connection(conn):
    """Closes with a TCP RST (SO_LINGER 0) instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


class Handler(standin.Handler):  # quiet: everything goes to --log
    role = "?"
    content_type = "application/xml"

    @property
    def keep_alive(self):
        return not ARGS.no_keepalive

    def s3_error(self, status, code, msg):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
                "<Message>%s</Message></Error>" % (code, msg)).encode()
        self.reply(status, body)

    def read_body(self, rec):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            rec["violation"] = "chunked upload"
            return None
        cl = self.headers.get("Content-Length")
        if cl is None:
            if self.command in ("PUT", "POST"):
                rec["violation"] = "no Content-Length"
                return None
            return b""
        return self.rfile.read(int(cl))

    def fault(self, f, rec, body_len):
        """Acts out fault f; True if the request is finished."""
        rec["fault"] = f
        if f in ("500", "503"):
            self.s3_error(int(f), "InternalError" if f == "500" else "SlowDown", "injected")
        elif f.startswith("429"):
            ra = f.split(":")[1] if ":" in f else "1"
            self.reply(429, b"slow down", "text/plain", {"Retry-After": ra})
        elif f == "hang":
            rec["status"] = 0
            log(dict(rec))  # now: the test may be over before the hang is
            rec["logged"] = True
            time.sleep(ARGS.hang_seconds)
            self.close_connection = True
        elif f == "close":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            return False
        kind = f.split(":")[0]
        rec["status"] = int(kind) if kind.isdigit() else 0
        return True

    # ---- dispatch ----
    def do_GET(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def dispatch(self):
        rec = {"role": self.role, "method": self.command, "path": self.path, "t0": time.time()}
        try:
            getattr(self, "handle_" + self.role)(rec)
        except (BrokenPipeError, ConnectionResetError, OSError) as e:
            rec.setdefault("status", 0)
            rec["error"] = str(e)
        if not rec.get("logged"):
            log(rec)

    # ---- s3: verify, maybe fault, forward ----
    def handle_s3(self, rec):
        u0 = urllib.parse.urlsplit(self.path).path.lstrip("/").split("/", 1)
        f = None
        if self.command == "PUT" and len(u0) > 1 and u0[0] not in ARGS.deny_bucket:
            f = next_fault("s3")
            if f in ("close", "reset"):  # mid-upload: half the body read, then dropped
                rec["key"], rec["bucket"], rec["fault"], rec["status"] = \
                    urllib.parse.unquote(u0[1]), u0[0], f, 0
                self.rfile.read(int(self.headers.get("Content-Length", "0")) // 2)
                self.close_connection = True
                if f == "reset":
                    reset_connection(self.connection)
                else:
                    self.connection.shutdown(2)
                return
        body = self.read_body(rec)
        if body is None:
            return self.s3_error(400, "BadRequest", rec["violation"])
        rec["sha256"] = hashlib.sha256(body).hexdigest()
        rec["bytes"] = len(body)
        hdrs = list(self.headers.items())
        for n, v in hdrs:
            if not v.strip():
                rec["violation"] = "empty-valued header %s" % n
                return self.s3_error(400, "BadRequest", rec["violation"])
        u = urllib.parse.urlsplit(self.path)
        now = time.time()

        def lookup(akid):
            with LOCK:
                c = CREDS.get(akid)
            if not c:
                return None
            if c[2] is not None and c[2] < now:
                rec["expired_creds"] = True
            return (c[0], c[1])
        res = sigv4.verify(self.command, u.path, u.query, hdrs, body, lookup)
        rec["akid"] = res[2]
        if not res[0]:
            rec["violation"] = "sigv4: " + res[1]
            rec["status"] = 403
            return self.s3_error(403, "SignatureDoesNotMatch", res[1])
        if rec.get("expired_creds"):
            rec["violation"] = "expired temporary credentials used"
            rec["status"] = 400
            return self.s3_error(400, "ExpiredToken", "The provided token has expired.")
        parts = u.path.lstrip("/").split("/", 1)
        bucket, key = parts[0], urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
        rec["bucket"], rec["key"] = bucket, key
        if self.command == "PUT" and key:
            if not KEY_RE.match(key):
                rec["violation"] = "object key outside [A-Za-z0-9._~/-]"
            if ARGS.region and "/%s/" % ARGS.region not in self.headers.get("Authorization", ""):
                rec["violation"] = "signed for the wrong region"
            if bucket in ARGS.deny_bucket:
                rec["status"] = 403
                return self.s3_error(403, "AccessDenied", "Access Denied")
            if f and not f.startswith("stored-") and self.fault(f, rec, len(body)):
                return
        # Forward without the signature (s3rver's own V4 check is partial).
        drop = {"authorization", "x-amz-security-token", "host", "expect", "connection"}
        fwd = {n: v for n, v in hdrs if n.lower() not in drop}
        conn = http.client.HTTPConnection(ARGS.upstream, timeout=30)
        conn.request(self.command, self.path, body=body if body or self.command in
                     ("PUT", "POST") else None, headers=fwd)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        rec["status"] = r.status
        if f and f.startswith("stored-") and 200 <= r.status < 300:
            # Stored, but the answer is lost or says otherwise: the client retries.
            rec["fault"] = f
            if f == "stored-500":
                return self.s3_error(500, "InternalError", "injected after storing")
            self.close_connection = True
            if f == "stored-hang":
                rec["logged"] = True
                log(dict(rec))
                time.sleep(ARGS.hang_seconds)
            elif f == "stored-reset":
                reset_connection(self.connection)
            else:
                self.connection.shutdown(2)
            return
        extra = {k: v for k, v in r.getheaders() if k.lower() in ("etag",)}
        self.reply(r.status, data, r.getheader("Content-Type") or "application/xml", extra)

    # ---- sts ----
    def handle_sts(self, rec):
        body = self.read_body(rec) or b""
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        q.update(dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"))))
        with LOCK:
            STATE["sts_calls"] += 1
        want_tok = open(ARGS.web_identity_token_file).read().strip()
        problems = []
        if q.get("Action") != "AssumeRoleWithWebIdentity":
            problems.append("Action")
        if q.get("Version") != "2011-06-15":
            problems.append("Version")
        if q.get("RoleArn") != ARGS.role_arn:
            problems.append("RoleArn")
        if not q.get("RoleSessionName"):
            problems.append("RoleSessionName")
        if q.get("WebIdentityToken") != want_tok:
            problems.append("WebIdentityToken is not the token file's current content")
        if problems:
            rec["violation"] = "sts: bad " + ", ".join(problems)
            rec["status"] = 400
            err = ("<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                   "<Message>%s</Message></Error></ErrorResponse>" % rec["violation"])
            return self.reply(400, err.encode(), "text/xml")
        akid, secret, token, exp = issue("sts")
        exp_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))
        xml = ("<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
               "<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>sub"
               "</SubjectFromWebIdentityToken><Credentials><SessionToken>%s</SessionToken>"
               "<SecretAccessKey>%s</SecretAccessKey><Expiration>%s</Expiration>"
               "<AccessKeyId>%s</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult>"
               "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
               "</AssumeRoleWithWebIdentityResponse>") % (token, secret, exp_s, akid)
        rec["status"] = 200
        rec["issued"] = akid
        self.reply(200, xml.encode(), "text/xml")

    # ---- pod identity ----
    def handle_pod(self, rec):
        self.read_body(rec)
        with LOCK:
            STATE["pod_calls"] += 1
        want = open(ARGS.pod_token_file).read().strip()
        if self.headers.get("Authorization") != want:
            rec["violation"] = "pod: Authorization is not the token file's content"
            rec["status"] = 403
            return self.reply(403, b'{"Message":"denied"}', "application/json")
        akid, secret, token, exp = issue("pod")
        doc = {"AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
               "AccountId": "123456789012",
               "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))}
        rec["status"] = 200
        rec["issued"] = akid
        self.reply(200, json.dumps(doc).encode(), "application/json")

    # ---- GCE metadata ----
    def handle_meta(self, rec):
        self.read_body(rec)
        if self.headers.get("Metadata-Flavor") != "Google":
            rec["violation"] = "meta: no Metadata-Flavor: Google"
            rec["status"] = 403
            return self.reply(403, b"missing Metadata-Flavor", "text/plain")
        if urllib.parse.urlsplit(self.path).path != \
                "/computeMetadata/v1/instance/service-accounts/default/token":
            rec["status"] = 404
            return self.reply(404, b"not found", "text/plain")
        with LOCK:
            STATE["meta_calls"] += 1
        tok = sentinel_secret("gcetoken")
        with LOCK:
            BEARER[tok] = time.time() + ARGS.cred_lifetime
        rec["status"] = 200
        self.reply(200, json.dumps({"access_token": tok, "expires_in": ARGS.cred_lifetime,
                                    "token_type": "Bearer"}).encode(), "application/json")

    # ---- GCS JSON API simple upload ----
    def handle_gcs(self, rec):
        body = self.read_body(rec)
        if body is None:
            return self.reply(400, b'{"error":{"message":"bad body"}}', "application/json")
        rec["sha256"] = hashlib.sha256(body).hexdigest()
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        m = re.match(r"^/upload/storage/v1/b/([^/]+)/o$", u.path)
        auth = self.headers.get("Authorization", "")
        now = time.time()
        with LOCK:
            exp = BEARER.get(auth[7:]) if auth.startswith("Bearer ") else None
        if self.command != "POST" or not m or q.get("uploadType") != "media" or not q.get("name"):
            rec["violation"] = "gcs: not a JSON API simple upload"
            rec["status"] = 400
            return self.reply(400, b'{"error":{"message":"bad request"}}', "application/json")
        if q.get("ifGenerationMatch") != "0":
            rec["violation"] = "gcs: no ifGenerationMatch=0"
        if exp is None or exp < now:
            rec["violation"] = "gcs: missing, unknown or expired bearer token"
            rec["status"] = 401
            return self.reply(401, b'{"error":{"code":401,"message":"Invalid Credentials"}}',
                              "application/json")
        bucket, name = m.group(1), q["name"]
        rec["bucket"], rec["key"] = bucket, name
        if not KEY_RE.match(name):
            rec["violation"] = "object name outside [A-Za-z0-9._~/-]"
        f = next_fault("gcs")
        if f and f != "stored-close" and self.fault(f, rec, len(body)):
            return
        path = os.path.join(ARGS.gcs_dir, bucket, name)
        if os.path.exists(path):
            rec["status"] = 412
            return self.reply(412, b'{"error":{"code":412,"message":"Precondition Failed"}}',
                              "application/json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as fh:
            fh.write(body)
        os.rename(path + ".tmp", path)
        rec["status"] = 200
        if f == "stored-close":
            rec["fault"] = f
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.reply(200, json.dumps({"kind": "storage#object", "bucket": bucket, "name": name,
                                    "size": str(len(body)), "generation": "1"}).encode(),
                   "application/json")


def issue(kind):
    with LOCK:
        n = len(CREDS)
    akid = "ASIA%s%04d" % (kind.upper(), n)
    secret = sentinel_secret(kind + "secret")
    token = sentinel_secret(kind + "token")
    exp = time.time() + ARGS.cred_lifetime
    with LOCK:
        CREDS[akid] = (secret, token, exp)
    return akid, secret, token, exp


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS, LOGF
    p = argparse.ArgumentParser()
    p.add_argument("--ports-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--roles", default="s3")
    p.add_argument("--upstream", default="")
    p.add_argument("--region", default="")
    p.add_argument("--static-key", action="append", default=[],
                   help="AKID:SECRET[:TOKEN] accepted by the s3 role")
    p.add_argument("--faults", default="")
    p.add_argument("--fault-seconds", type=float, default=0)
    p.add_argument("--fault-roles", default="s3,gcs")
    p.add_argument("--fault-rate", type=float, default=0,
                   help="fault each upload with this probability (faults picked at random)")
    p.add_argument("--fault-seed", type=int, default=1)
    p.add_argument("--fault-stop-file", default="",
                   help="with --fault-rate: no more faults once this file exists")
    p.add_argument("--no-keepalive", action="store_true",
                   help="one request per connection: libcurl then never resends a request "
                        "by itself on a reused connection that died, so every request seen "
                        "is one attempt of the sidecar")
    p.add_argument("--hang-seconds", type=float, default=30)
    p.add_argument("--deny-bucket", action="append", default=[])
    p.add_argument("--sentinel", default="SENTINEL")
    p.add_argument("--role-arn", default="")
    p.add_argument("--web-identity-token-file", default="")
    p.add_argument("--pod-token-file", default="")
    p.add_argument("--cred-lifetime", type=int, default=900)
    p.add_argument("--gcs-dir", default="")
    p.add_argument("--static-bearer", action="append", default=[])
    p.add_argument("--tls-cert", default="", help="serve the s3 role over TLS")
    p.add_argument("--tls-key", default="")
    ARGS = p.parse_args()
    RNG.seed(ARGS.fault_seed)
    ARGS.faults = [f for f in ARGS.faults.split(",") if f]
    for k in ARGS.static_key:
        parts = k.split(":", 2)
        CREDS[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None, None)
    for t in ARGS.static_bearer:
        BEARER[t] = time.time() + 3600
    LOGF = open(ARGS.log, "a")
    ports = {}
    for role in ARGS.roles.split(","):
        h = type("H_" + role, (Handler,), {"role": role})
        srv = Server(("127.0.0.1", 0), h)
        if role == "s3" and ARGS.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        ports[role] = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = ARGS.ports_file + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(ports, fh)
    os.rename(tmp, ARGS.ports_file)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
