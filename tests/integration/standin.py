"""What the HTTP stand-ins (the S3/GCS testbed, the Pyroscope stand-in,
the OTLP receiver) share: a handler that speaks HTTP/1.1 (so it answers
Expect: 100-continue), logs nothing of its own, and replies in one call."""
import http.server


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    content_type = "application/octet-stream"  # reply()'s default
    keep_alive = True  # False: every reply closes its connection

    def log_message(self, fmt, *a):
        pass

    def reply(self, status, body=b"", ctype=None, extra=None):
        """Sends status, the headers in extra and body (not for HEAD)."""
        self.send_response(status)
        if not self.keep_alive:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Type", ctype or self.content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
