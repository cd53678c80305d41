"""The include graph's rules (scripts/layers.py): the tree keeps them, and the
checker finds an upward include, a cycle and a program including the other's
header in a tree made to have them."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAYERS = os.path.join(ROOT, "scripts", "layers.py")


def run(root):
    p = subprocess.run([sys.executable, LAYERS, root], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class LayersTest(unittest.TestCase):
    def test_the_tree_keeps_the_rules(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)
        self.assertIn("no upward include, no cycle", out)

    def test_violations_are_named(self):
        with tempfile.TemporaryDirectory() as t:
            write(t, "libk8s/base/k8s_buf.h", '#include "k8s_json.h"\n')  # up a layer
            write(t, "libk8s/base/k8s_buf.c", '#include "k8s_buf.h"\n')
            write(t, "libk8s/format/k8s_json.h", "")
            write(t, "libk8s/format/k8s_json.c", '#include "k8s_yaml.h"\n')
            write(t, "libk8s/format/k8s_yaml.h", "")
            write(t, "libk8s/format/k8s_yaml.c", '#include "k8s_json.h"\n')  # a cycle
            write(t, "webhook/wh_x.c", '#include "op_plan.h"\n')
            write(t, "operator/op_y.c", '#include "k8s_buf.h"\n')
            rc, out = run(t)
        self.assertEqual(rc, 1)
        self.assertIn("libk8s/base/k8s_buf.h (base) includes k8s_json.h of the higher layer "
                      "format", out)
        self.assertIn("include cycle: k8s_json -> k8s_yaml -> k8s_json", out)
        self.assertIn("webhook/wh_x.c includes op_plan.h", out)
        self.assertNotIn("op_y", out)


if __name__ == "__main__":
    unittest.main()
