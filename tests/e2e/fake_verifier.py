#!/usr/bin/python3
"""A stand-in for a reCAPTCHA v1 style verifier, for the e2e tests.

Usage: fake_verifier.py PORT LOGFILE

Listens on 127.0.0.1:PORT. Every POST is answered 200 text/plain with
"true\\n" when the form field response == "good", else
"false\\nincorrect-captcha-sol"; except that the response "http-500"
gets an HTTP 500, and "garbled" a 200 whose first line is neither true
nor false (a broken verifier). Each request's fields are appended to
LOGFILE as one JSON object per line:
{"path": ..., "content_type": ..., "fields": {"privatekey": ..., ...}}.
Other methods get 405. Python stdlib only; stop it with SIGTERM/SIGINT.
"""
import json
import signal
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

MAX_BODY = 64 * 1024


class Handler(BaseHTTPRequestHandler):
    server_version = "fake-verifier/1"
    log_path = None

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.answer(413, b"too large\n")
            return
        raw = self.rfile.read(length).decode("utf-8", "replace")
        pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True)
        fields = {k: v for k, v in pairs}
        record = {
            "path": self.path,
            "content_type": self.headers.get("Content-Type", ""),
            "fields": fields,
        }
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record, sort_keys=True) + "\n")
        if fields.get("response") == "http-500":
            self.answer(500, b"internal error\n")
        elif fields.get("response") == "garbled":
            self.answer(200, b"<html>maybe</html>\n")
        elif fields.get("response") == "good":
            self.answer(200, b"true\n")
        else:
            self.answer(200, b"false\nincorrect-captcha-sol")

    def do_GET(self):
        self.answer(405, b"POST only\n")

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: fake_verifier.py PORT LOGFILE\n")
        return 2
    port = int(sys.argv[1])
    Handler.log_path = sys.argv[2]
    httpd = HTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
