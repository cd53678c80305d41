#!/usr/bin/python3
"""Render nginx.conf.tmpl for the ceiling arm.

Usage: nginx_conf.py TEMPLATE OUT_DIR PORT CERT KEY CANNED_BODY_FILE

One nginx config token is at most 4 KiB, so the canned body is inlined as
2 KiB chunks (set $b0 '...'; set $b1 '...'; ...) that `return` concatenates."""
import sys

tmpl, out, port, cert, key, canned = sys.argv[1:7]
with open(canned) as f:
    body = f.read()
if any(c in body for c in "$'\\"):
    sys.exit("nginx_conf: %s has $, ' or \\: cannot inline it" % canned)
with open(tmpl) as f:
    t = f.read()
for name, value in (("OUT", out), ("PORT", port), ("CERT", cert), ("KEY", key)):
    t = t.replace("@%s@" % name, value)
chunks = [body[i:i + 2048] for i in range(0, len(body), 2048)]
t = t.replace("@BODY_SETS@", "\n".join("            set $b%d '%s';" % (i, c)
                                       for i, c in enumerate(chunks)))
sys.stdout.write(t.replace("@BODY_VARS@", "".join("$b%d" % i for i in range(len(chunks)))))
