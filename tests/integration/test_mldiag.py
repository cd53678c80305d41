"""kubectl-mldiag, the kubectl plugin, against the fake API server, the
operator and fake profilers: capture --wait follows a capture to its end and
says where the profiles are (exit 0) or what failed (exit 1); list and
status read them back; --namespace/-n and --context pick where, with the
user's kubeconfig; usage errors exit 2 and say why."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_operator import NS, OperatorTest, make_pod, next_ip  # noqa: E402
from harness import BIN_DIR, SLOW  # noqa: E402

PLUGIN = os.path.join(BIN_DIR, "kubectl-mldiag")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Plugin(OperatorTest):
    operator_args = ("--sidecar-timeout=20s",)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api.create(("", "v1", "namespaces"), {"metadata": {"name": "other"}})
        # a kubeconfig whose current context's namespace is ml, and a second context
        cls.api.kubeconfig(cls.kubeconfig, namespace=NS)
        with open(cls.kubeconfig) as f:
            text = f.read()
        cls.two = os.path.join(cls.tmp, "two-contexts")
        with open(cls.two, "w") as f:
            f.write(text.replace("contexts:\n", "contexts:\n- name: other-ctx\n  context:\n"
                                 "    cluster: fake\n    user: fake\n    namespace: other\n", 1))

    def mldiag(self, *args, kubeconfig=None, timeout=60):
        env = dict(os.environ, KUBECONFIG=kubeconfig or self.kubeconfig)
        return subprocess.run([PLUGIN, *args], capture_output=True, text=True, env=env,
                              timeout=timeout * SLOW)

    def pod(self, name, mode="ok", ns=NS):
        ip = next_ip()
        self.prof.add_pod(name, ip, mode=mode)
        make_pod(self.api, name, ip, ns=ns)
        return name

    def test_capture_wait_follows_it_and_says_where_the_profiles_are(self):
        pods = [self.pod("fw-0"), self.pod("fw-1")]
        r = self.mldiag("capture", "pod/" + ",".join(pods), "--storage", "gs://bucket/fw",
                        "--duration", "1s", "--port", str(self.port), "--name", "fw", "--wait")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = r.stdout
        self.assertIn("mldiagnosticsconnection.diagon.gke.io/fw created", out)
        self.assertIn("Running: capturing 2 hosts for 1s", out)
        self.assertIn("Succeeded: captured 2 hosts into gs://bucket/fw/plugins/profile/", out)
        self.assertRegex(out, r"Profiles: gs://bucket/fw/plugins/profile/\d{4}_\d\d_\d\d")
        self.assertIn("Open them with:  xprof --logdir=gs://bucket/fw", out)
        for p in pods:
            self.assertEqual(len(self.prof.requests_for(p)), 1, p)
            self.assertIn("%s.xplane.pb" % p, out)
        self.assertEqual(r.stderr, "")

    def test_a_failed_capture_exits_1_naming_the_host(self):
        self.pod("ff-0", mode="busy")
        r = self.mldiag("capture", "pod/ff-0", "--storage", "gs://bucket/ff", "--duration", "1s",
                        "--port", str(self.port), "--name", "ff", "--wait")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("error: capture ff failed: 1 of 1 host failed", r.stderr)
        self.assertIn("ff-0", r.stderr)
        self.assertIn("Another profiling session active", r.stderr)

    def test_without_wait_it_returns_at_once_and_list_and_status_read_it(self):
        self.pod("ls-0")
        r = self.mldiag("capture", "pods/ls-0", "--storage", "/data/p", "--port",
                        str(self.port), "--duration", "1s", "--name", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Follow it with:  kubectl mldiag status ls -n ml", r.stdout)
        self.assertEqual(self.mldiag("capture", "pod/ls-0", "--storage", "/data/p",
                                     "--name", "ls").returncode, 1, "exists already")
        self.wait_phase("ls")
        r = self.mldiag("list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.splitlines()[0], r"^NAME\s+TARGET\s+PHASE\s+HOSTS\s+AGE$")
        self.assertRegex(r.stdout, r"\nls\s+pod/ls-0\s+Succeeded\s+1\s+\d+s")
        r = self.mldiag("list", "-A")
        self.assertRegex(r.stdout, r"\nml\s+ls\s+pod/ls-0\s+Succeeded")
        r = self.mldiag("status", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Phase:      Succeeded", r.stdout)
        self.assertIn("kubectl cp ml/ls-0:/data/p/plugins/profile/", r.stdout)
        r = self.mldiag("status", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("not found", r.stderr)

    def test_namespace_and_context_pick_where(self):
        self.pod("ns-0", ns="other")
        r = self.mldiag("capture", "pod/ns-0", "-n", "other", "--storage", "/data/p",
                        "--port", str(self.port), "--name", "in-other")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.wait_phase("in-other", ns="other")["status"]["phase"], "Succeeded")
        r = self.mldiag("status", "in-other", "--context", "other-ctx", kubeconfig=self.two)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Namespace:  other", r.stdout)
        r = self.mldiag("list", "--namespace", "other")
        self.assertIn("in-other", r.stdout)
        r = self.mldiag("list", "--context", "nope", kubeconfig=self.two)
        self.assertEqual(r.returncode, 1)
        self.assertIn("context \"nope\" not found", r.stderr)

    def test_help_and_usage_errors(self):
        r = self.mldiag("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("kubectl mldiag capture TYPE/NAME --storage LOCATION", r.stdout)
        r = self.mldiag("capture", "--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--duration", "--hosts", "--replicated-jobs", "--wait", "--namespace",
                     "--context", "--python-tracer-level"):
            self.assertIn(flag, r.stdout)
        for args, why in ((("frobnicate",), 'unknown command "frobnicate"'),
                          (("capture", "deployment/web", "--storage", "/p"),
                           "not a kind a capture can target"),
                          (("capture", "jobset/x"), "--storage: required"),
                          (("capture", "pod/a", "--storage", "/p", "--hosts", "0"),
                           "name a workload, not pods"),
                          (("capture", "jobset/x", "--bogus"), "bogus"),
                          (("status",), "expected 1 argument")):
            r = self.mldiag(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(why, r.stderr, args)

    def test_version_and_make_install(self):
        r = self.mldiag("version")
        self.assertRegex(r.stdout, r"^kubectl-mldiag \d+\.\d+\.\d+\n$")
        # make install puts the plugin beside the programs, where kubectl finds it on PATH
        r = subprocess.run(["make", "-n", "-C", ROOT, "install", "DESTDIR=/dest",
                            "PREFIX=/opt/mld"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.replace("\\\n", ""),
                         r"install -m 0755 [^\n]*kubectl-mldiag /dest/opt/mld/bin/")


if __name__ == "__main__":
    unittest.main()
