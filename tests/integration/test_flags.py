"""Flags are declared once (libk8s/base/k8s_flags.h): for every command of both
binaries, the help text lists each flag with the default the program really
starts with, and the --dry-run JSON of the servers has one member per flag,
holding the value the help called the default."""
import json
import os
import re
import subprocess
import unittest

BIN_DIR = os.environ.get("MLD_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))
WEBHOOK = os.path.join(BIN_DIR, "mldiagnostics-webhook")
OPERATOR = os.path.join(BIN_DIR, "mldiagnostics-operator")

# A help line: "  --name type   help (default D)" (or "-v int ...").
LINE = re.compile(r"^  (--?[a-z][a-z0-9-]*)(?: (string|int|duration|bytes))? +(.*?)"
                  r"(?: \(default (.*)\))?$")


def run(cmd, env=None):
    e = dict(os.environ)
    for k in ("CERT_PATH", "KEY_PATH", "CLUSTER_NAME", "POD_NAMESPACE", "KUBERNETES_CLUSTER_DOMAIN"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=e)


def help_flags(cmd, env=None):
    """{flag name: (type, default or None)} from a command's --help."""
    p = run(cmd + ["--help"], env)
    if p.returncode != 0:
        raise AssertionError("%s --help: %d %s" % (cmd, p.returncode, p.stderr))
    out = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if m:
            out[m.group(1).lstrip("-")] = (m.group(2) or "bool", m.group(4))
    return out


def as_help_text(kind, value):
    """A --dry-run value as the help prints its default (None: no default)."""
    if kind == "bool":
        return "true" if value else None
    if kind == "bytes":
        for unit in ("Gi", "Mi", "Ki"):
            n = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[unit]
            if value and value % n == 0:
                return "%d%s" % (value // n, unit)
        return str(value) if value else None
    if kind == "int":
        return str(value) if value else None
    return value or None  # strings, Go durations ("0s" is never a default here)


class DefaultsAreTheRealDefaults(unittest.TestCase):
    def check_server(self, binary, extra=()):
        flags = help_flags([binary])
        p = run([binary, *extra, "--dry-run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        settings = json.loads(p.stdout)
        self.assertEqual(set(settings), set(flags) - {"dry-run"},
                         "one --dry-run member per flag")
        for name, (kind, dflt) in flags.items():
            if name == "dry-run" or name in extra_derived.get(os.path.basename(binary), ()):
                continue
            want = settings[name]
            if name == "standalone":
                want = False  # given on this command line, not a default
            self.assertEqual(dflt, as_help_text(kind, want), name)
        return flags

    def test_webhook_serve(self):
        flags = self.check_server(WEBHOOK, ("--standalone",))
        self.assertEqual(flags["port"], ("int", "8443"))
        self.assertEqual(flags["max-request-bytes"], ("bytes", "8Mi"))
        self.assertEqual(flags["skip-containers"][1], "istio-proxy,linkerd-proxy")

    def test_operator(self):
        flags = self.check_server(OPERATOR)
        self.assertEqual(flags["sidecar-timeout"], ("duration", "5m0s"))
        self.assertEqual(flags["leader-elect"], ("bool", None))

    def test_the_environment_moves_the_printed_default(self):
        flags = help_flags([WEBHOOK], {"CERT_PATH": "/x/tls.crt", "CLUSTER_NAME": "c1"})
        self.assertEqual(flags["tls-cert-file"][1], "/x/tls.crt")
        self.assertEqual(flags["cluster-name"][1], "c1")
        flags = help_flags([OPERATOR, "selftest"], {"POD_NAMESPACE": "mine"})
        self.assertEqual(flags["namespace"][1], "mine")

    def test_subcommands_print_their_flags_with_defaults(self):
        cases = {
            (WEBHOOK, "certgen"): {"renew-before": "720h0m0s", "validity": "8760h0m0s",
                                   "cluster-domain": "cluster.local", "service": None},
            (WEBHOOK, "selftest"): {"namespace": "default", "timeout": "1m0s", "interval": "2s"},
            (WEBHOOK, "inject"): {"otel-collector-name": "opentelemetry-collector", "f": None},
            (OPERATOR, "selftest"): {"namespace": "gke-mldiagnostics",
                                     "deployment": "mldiagnostics-connection-operator"},
        }
        for (binary, sub), want in cases.items():
            flags = help_flags([binary, sub])
            for name, dflt in want.items():
                self.assertIn(name, flags, "%s %s" % (sub, name))
                self.assertEqual(flags[name][1], dflt, "%s --%s" % (sub, name))
            p = run([binary, sub, "--bogus"])
            self.assertEqual(p.returncode, 2, sub)
            self.assertIn("unknown flag: --bogus", p.stderr)


# --dry-run members that are derived, not the flag's value.
extra_derived = {"mldiagnostics-operator": ("leader-election-namespace",)}

if __name__ == "__main__":
    unittest.main()
