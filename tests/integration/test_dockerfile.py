"""The Dockerfile (DESIGN §5), checked without an image builder (`make images` and the
end-to-end tier build and run it for real): the stage names and targets, the build stage
running the unit tests, runtime images FROM scratch holding the rootfs stage's tree and one
binary as user 65532, COPY sources that exist in the repository and binaries the build really
produces, rootfs packages that provide every shared library the binaries need (ELF NEEDED
entries, resolved and mapped to Debian packages with dpkg -S, plus libcurl.so.4 and
libcrypto.so.3, which libk8s dlopens) and no -dev package; and scripts/rootfs.sh, run here
with the Dockerfile's own arguments, making a tree in which each binary runs in a chroot."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from harness import BIN_DIR  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BINARIES = {"webhook": "mldiagnostics-webhook", "operator": "mldiagnostics-operator"}
# what else an image holds: the kubectl plugin ships beside the operator
EXTRAS = {"webhook": [], "operator": ["kubectl-mldiag"]}
ALL_BINARIES = list(BINARIES.values()) + [b for v in EXTRAS.values() for b in v]
DLOPENED = ["libcurl.so.4", "libcrypto.so.3"]  # libk8s/kube/k8s_curl.c, libk8s/kube/k8s_certmint.c


def parse_dockerfile(path):
    """[(stage name, base, [(instruction, argument text)])], ARG defaults resolved."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    args, stages = {}, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "ARG" and not stages:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
            continue
        if instr == "FROM":
            m = re.match(r"(\S+)\s+AS\s+(\S+)$", rest.strip(), re.I)
            base = re.sub(r"\$\{(\w+)\}", lambda g: args.get(g.group(1), g.group(0)), m.group(1))
            stages.append((m.group(2), base, []))
            continue
        stages[-1][2].append((instr, rest.strip()))
    return stages


def ldd_packages(binary):
    """The Debian packages that provide binary's direct shared libraries (ELF NEEDED) and
    the dlopened ones; apt brings their own dependencies."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    where = dict(re.findall(r"^\s*(\S+)\s+=>\s+(/\S+)", out, re.M))
    dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                         check=True).stdout
    paths = [where[n] for n in re.findall(r"\(NEEDED\).*\[(.+)\]", dyn)]
    for lib in DLOPENED:
        found = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        m = re.search(r"%s .*=> (\S+)" % re.escape(lib), found)
        assert m, "%s not installed here" % lib
        paths.append(m.group(1))
    pkgs = {}
    for p in paths:
        real = os.path.realpath(p)
        res = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if res.returncode != 0:  # usrmerge: dpkg knows the /lib path
            res = subprocess.run(["dpkg", "-S", real.replace("/usr/lib/", "/lib/", 1)],
                                 capture_output=True, text=True, check=True)
        pkgs[os.path.basename(p)] = res.stdout.split(":")[0]
    return pkgs


class DockerfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stages = parse_dockerfile(os.path.join(ROOT, "Dockerfile"))
        cls.by_name = {s[0]: s for s in cls.stages}

    def instrs(self, stage, kind):
        return [a for i, a in self.by_name[stage][2] if i == kind]

    def apt_packages(self, stage):
        pkgs = set()
        for run in self.instrs(stage, "RUN"):
            for cmd in re.split(r"&&|;", run):
                words = shlex.split(cmd)
                if words[:2] == ["apt-get", "install"]:
                    pkgs |= {w for w in words[2:] if not w.startswith("-")}
        return pkgs

    def chain(self, stage):
        """The stage and the stages it builds on, nearest first."""
        out = [stage]
        while self.by_name[out[-1]][1] in self.by_name:
            out.append(self.by_name[out[-1]][1])
        return out

    def test_stages_and_bases(self):
        names = [s[0] for s in self.stages]
        self.assertEqual(names[0], "build")
        self.assertEqual(self.by_name["build"][1], "debian:12")
        self.assertEqual(self.by_name["rootfs"][1], "debian:12-slim")
        for target in ("webhook", "operator"):
            self.assertIn(target, names)
            self.assertEqual(self.chain(target)[-1], "runtime", target)
        self.assertEqual(self.by_name["runtime"][1], "scratch")
        self.assertEqual(self.instrs("runtime", "COPY"), ["--from=rootfs /rootfs/ /"])

    def rootfs_args(self):
        """The rootfs.sh command line of the rootfs stage, as words."""
        for run in self.instrs("rootfs", "RUN"):
            words = shlex.split(run)
            if words and words[0] == "rootfs.sh":
                return words[1:]
        self.fail("the rootfs stage runs no rootfs.sh")

    def test_build_stage_runs_the_unit_tests(self):
        runs = " ".join(self.instrs("build", "RUN"))
        self.assertRegex(runs, r"ctest .*-L unit")
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", runs)
        for src in self.instrs("build", "COPY"):
            for path in src.split()[:-1]:
                self.assertTrue(os.path.exists(os.path.join(ROOT, path)), path)

    def test_runtime_is_non_root_and_holds_its_binaries(self):
        for target, binary in BINARIES.items():
            users = [u for st in reversed(self.chain(target)) for u in self.instrs(st, "USER")]
            self.assertTrue(users, target)
            self.assertEqual(users[-1], "65532:65532", target)
            copies = [c for st in self.chain(target) for c in self.instrs(st, "COPY")
                      if c.startswith("--from=build")]
            self.assertEqual(sorted(os.path.basename(c.split()[1]) for c in copies),
                             sorted([binary] + EXTRAS[target]), copies)
            for c in copies[1:]:
                src, dst = c.split()[1:]
                self.assertEqual(dst, "/usr/local/bin/" + os.path.basename(src))
                self.assertTrue(os.access(os.path.join(BIN_DIR, os.path.basename(src)),
                                          os.X_OK), src)
            src, dst = copies[0].split()[1:]
            self.assertEqual(copies[0].split()[0], "--from=build")
            self.assertTrue(src.startswith("/src/build/bin/"))
            built = os.path.join(BIN_DIR, os.path.basename(src))
            self.assertTrue(os.access(built, os.X_OK), "%s is not a build output" % src)
            self.assertEqual(os.path.basename(src), binary)
            (entry,) = self.instrs(target, "ENTRYPOINT")
            self.assertEqual(entry, '["%s"]' % dst)  # exec form, no shell

    def test_runtime_packages_provide_every_library(self):
        runtime = self.apt_packages("rootfs")
        self.assertFalse([p for p in runtime if p.endswith("-dev")])
        for binary in ALL_BINARIES:
            needed = ldd_packages(os.path.join(BIN_DIR, binary))
            for lib, pkg in needed.items():
                if pkg in ("libc6", "libgcc-s1"):  # in the slim base image
                    continue
                if re.match(r"lib(a|ub|l|t)san", lib):  # a sanitizer build's runtime
                    continue
                self.assertIn(pkg, runtime, "%s needs %s (%s)" % (binary, lib, pkg))

    def test_the_charts_prestop_command_is_in_the_runtime_image(self):
        """The webhook's preStop execs /bin/sleep: the rootfs stage must take it (--with)."""
        import charts
        dep = charts.find(charts.render("mldiagnostics-injection-webhook"), "Deployment")
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        binary = c["lifecycle"]["preStop"]["exec"]["command"][0]
        args = self.rootfs_args()
        withs = args[args.index("--with") + 1:]
        withs = withs[:next((i for i, w in enumerate(withs) if w.startswith("--")),
                            len(withs))]
        self.assertIn(binary, withs)

    @unittest.skipUnless(os.geteuid() == 0, "chroot needs root")
    def test_the_rootfs_runs_each_binary_in_a_chroot(self):
        """rootfs.sh with the Dockerfile's arguments (the build's binaries in place of
        /tmp/bin): each binary, copied in as the Dockerfile does, runs as 65532 in a chroot
        of that tree, and so does the preStop's sleep; there is no shell."""
        if os.environ.get("MLD_SANITIZE"):
            self.skipTest("the sanitizer runtimes read /proc, which a bare chroot lacks")
        args = [a.replace("/tmp/bin/", BIN_DIR + "/") for a in self.rootfs_args()]
        tree = tempfile.mkdtemp(prefix="mld-rootfs-")
        self.addCleanup(shutil.rmtree, tree, True)
        dest = os.path.join(tree, "rootfs")
        subprocess.run([os.path.join(ROOT, "scripts", "rootfs.sh"), dest] + args[1:],
                       check=True, capture_output=True, timeout=120)
        os.makedirs(os.path.join(dest, "usr/local/bin"), exist_ok=True)
        for binary in ALL_BINARIES:
            shutil.copy(os.path.join(BIN_DIR, binary), os.path.join(dest, "usr/local/bin"))
            out = subprocess.run(["chroot", "--userspec=65532:65532", dest,
                                  "/usr/local/bin/" + binary, "--version"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"^%s \d+\.\d+\.\d+" % binary)
        out = subprocess.run(["chroot", "--userspec=65532:65532", dest, "/bin/sleep", "0"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        for absent in ("bin/sh", "bin/bash", "usr/bin/apt-get", "usr/bin/dpkg"):
            self.assertFalse(os.path.lexists(os.path.join(dest, absent)), absent)
        with open(os.path.join(dest, "etc/passwd")) as f:
            self.assertIn("nonroot:x:65532:65532:", f.read())

    def test_dockerignore_keeps_build_trees_out(self):
        with open(os.path.join(ROOT, ".dockerignore")) as f:
            lines = f.read().split()
        for p in (".git", "build", "build-*"):
            self.assertIn(p, lines)


if __name__ == "__main__":
    unittest.main()
