"""AWS Signature Version 4 verification for the S3 test tools.

Recomputes a request's signature from its method, path, query, headers and
body with Python's own hmac/hashlib, independently of libcurl, so the tests
notice when the sidecar signs wrongly. `python3 sigv4.py --selftest` checks
this code against AWS's published GET Object example.
"""
import hashlib
import hmac
import re
import sys
import urllib.parse

ALGO = "AWS4-HMAC-SHA256"
AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
    r"SignedHeaders=([a-z0-9;._-]+),\s*Signature=([0-9a-f]{64})$")


def _h(data):
    return hashlib.sha256(data).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(secret, date, region, service):
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def _enc(s, keep_slash):
    return urllib.parse.quote(s, safe="-_.~" + ("/" if keep_slash else ""))


def canonical_uri(raw_path):
    # S3: each segment URI-encoded once (the sender's encoding, normalized).
    return _enc(urllib.parse.unquote(raw_path), True) or "/"


def canonical_query(raw_query):
    pairs = urllib.parse.parse_qsl(raw_query, keep_blank_values=True)
    enc = sorted((_enc(k, False), _enc(v, False)) for k, v in pairs)
    return "&".join(k + "=" + v for k, v in enc)


def canonical_request(method, raw_path, raw_query, headers, signed, payload_hash):
    """headers: list of (name, value) as received; signed: list of names."""
    by = {}
    for n, v in headers:
        by.setdefault(n.lower(), []).append(" ".join(v.strip().split()))
    lines = []
    for n in signed:
        if n not in by:
            raise ValueError("signed header %s not in the request" % n)
        lines.append(n + ":" + ",".join(by[n]))
    return "\n".join([method, canonical_uri(raw_path), canonical_query(raw_query),
                      "\n".join(lines) + "\n", ";".join(signed), payload_hash])


def string_to_sign(amz_date, scope, creq):
    return "\n".join([ALGO, amz_date, scope, _h(creq.encode())])


def signature(secret, amz_date, region, service, creq):
    scope = "%s/%s/%s/aws4_request" % (amz_date[:8], region, service)
    sts = string_to_sign(amz_date, scope, creq)
    return hmac.new(signing_key(secret, amz_date[:8], region, service), sts.encode(),
                    hashlib.sha256).hexdigest()


def verify(method, raw_path, raw_query, headers, body, lookup_secret):
    """Returns (ok, reason, akid). lookup_secret(akid) -> (secret, token) or None."""
    by = {}
    for n, v in headers:
        by.setdefault(n.lower(), []).append(v)
    auth = by.get("authorization", [""])[0]
    m = AUTH_RE.match(auth.strip())
    if not m:
        return False, "malformed Authorization header", None
    akid, date, region, service, signed_s, sig = m.groups()
    signed = signed_s.split(";")
    if signed != sorted(signed):
        return False, "SignedHeaders not sorted", akid
    for need in ("host", "x-amz-date", "x-amz-content-sha256"):
        if need not in signed:
            return False, "%s not signed" % need, akid
    for n in by:
        if n.startswith("x-amz-") and n not in signed:
            return False, "%s sent but not signed" % n, akid
    amz_date = by["x-amz-date"][0].strip()
    if amz_date[:8] != date:
        return False, "credential date differs from x-amz-date", akid
    ph = by["x-amz-content-sha256"][0].strip()
    if ph != _h(body):
        return False, "x-amz-content-sha256 is not the SHA-256 of the body", akid
    found = lookup_secret(akid)
    if not found:
        return False, "unknown access key", akid
    secret, token = found
    if token is not None and by.get("x-amz-security-token", [None])[0] != token:
        return False, "x-amz-security-token missing or wrong", akid
    try:
        creq = canonical_request(method, raw_path, raw_query, headers, signed, ph)
    except ValueError as e:
        return False, str(e), akid
    want = signature(secret, amz_date, region, service, creq)
    if not hmac.compare_digest(want, sig):
        return False, "signature mismatch", akid
    return True, "ok", akid


def selftest():
    # AWS's published example: "Example: GET Object" in the S3 API reference,
    # "Signature Calculations for the Authorization Header".
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    headers = [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
               ("x-amz-content-sha256", empty), ("x-amz-date", "20130524T000000Z")]
    signed = ["host", "range", "x-amz-content-sha256", "x-amz-date"]
    creq = canonical_request("GET", "/test.txt", "", headers, signed, empty)
    sts = string_to_sign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", creq)
    assert _h(creq.encode()) == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972", creq
    sig = signature(secret, "20130524T000000Z", "us-east-1", "s3", creq)
    want = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    assert sig == want, (sig, sts)
    auth = ("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" + want)
    ok = verify("GET", "/test.txt", "", headers + [("Authorization", auth)], b"",
                lambda a: (secret, None) if a == "AKIAIOSFODNN7EXAMPLE" else None)
    assert ok[0], ok
    # One flipped byte anywhere must fail.
    bad = verify("GET", "/test.txx", "", headers + [("Authorization", auth)], b"",
                 lambda a: (secret, None))
    assert not bad[0] and bad[1] == "signature mismatch", bad
    bad = verify("GET", "/test.txt", "", headers + [("Authorization", auth)], b"x",
                 lambda a: (secret, None))
    assert not bad[0], bad
    bad = verify("GET", "/test.txt", "", headers + [("Authorization", auth),
                 ("x-amz-security-token", "t")], b"", lambda a: (secret, None))
    assert not bad[0] and "not signed" in bad[1], bad
    print("sigv4 selftest ok: AWS GET Object example signature", want)


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        sys.exit("usage: sigv4.py --selftest")
