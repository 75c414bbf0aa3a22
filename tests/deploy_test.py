"""Checks what can be checked here of deploy/: manifests parse and say what they must,
the example configs pass the server's own validation, the systemd unit verifies."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

DEPLOY = os.path.dirname(harness.runfile("deploy/config.example.yaml"))


def check_config(path):
    """--check_config on a copy of the config whose /data/ paths point at files written
    here, SEG-Y, .npy or HDF5 by their names (check_config opens every file the patterns
    match)."""
    with open(path) as f:
        text = f.read()
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    text = text.replace("/data/", f"{tmp}/data/")
    for d in yaml.safe_load(text)["datasets"]:
        for pattern in [d["files"]] if isinstance(d["files"], str) else d["files"]:
            os.makedirs(os.path.dirname(pattern), exist_ok=True)
            path = pattern.replace("*", "1")
            if path.endswith(".npy"):
                np.save(path, np.zeros((1, 2, 10), np.float32))
            elif path.endswith(".h5"):
                with h5py.File(path, "w") as h:
                    h["data"] = np.zeros((1, 2, 10), np.float32)
            else:
                harness.write_survey(path, 5, [1], 2, 10)
    copy = os.path.join(tmp, "config.yaml")
    with open(copy, "w") as f:
        f.write(text)
    return subprocess.run([harness.runfile(harness.SERVER), f"--config={copy}",
                           "--check_config"], capture_output=True, text=True, timeout=60)


class DeployTest(unittest.TestCase):

    def test_example_config_is_valid(self):
        res = check_config(os.path.join(DEPLOY, "config.example.yaml"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("4 datasets: line1 line2 model synthetic", res.stdout)

    def test_example_config_names_every_key_the_server_accepts(self):
        """Every key the parser accepts, in every section, appears in the example (set or
        commented out). The accepted keys are the server's own word: the "known:" list of
        the error for an unknown key in that section."""
        sections = {
            "": "zzz: 1\n",
            "keepalive": "keepalive: {zzz: 1}\n",
            "limits": "limits: {zzz: 1}\n",
            "tls": "tls: {zzz: 1}\n",
            "auth": "auth: {zzz: 1}\n",
            "datasets": "datasets: [{name: a, files: /nonexistent, zzz: 1}]\n",
        }
        with open(os.path.join(DEPLOY, "config.example.yaml")) as f:
            example = f.read()
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        missing = []
        for section, text in sections.items():
            path = os.path.join(tmp, f"probe_{section or 'top'}.yaml")
            with open(path, "w") as f:
                f.write(text)
            res = subprocess.run([harness.runfile(harness.SERVER), f"--config={path}",
                                  "--check_config"], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(res.returncode, 0, section)
            known = re.search(r"unknown key \(known: ([^)]*)\)", res.stderr)
            self.assertIsNotNone(known, res.stderr)
            keys = [k.strip() for k in known.group(1).split(",")]
            self.assertGreater(len(keys), 1, section)
            for key in keys:
                if not re.search(rf"(^|[\s{{,#]){re.escape(key)}:", example, re.M):
                    missing.append(f"{section}.{key}" if section else key)
        self.assertEqual(missing, [], "keys the server accepts that the example lacks")

    def test_kubernetes_manifests(self):
        with open(os.path.join(DEPLOY, "k8s", "shotstream.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        kinds = {d["kind"]: d for d in docs}
        self.assertEqual(set(kinds), {"ConfigMap", "DaemonSet", "Service"})
        ds = kinds["DaemonSet"]["spec"]["template"]["spec"]
        self.assertEqual(ds["nodeSelector"], {"shotstream.io/storage": "true"})
        self.assertTrue(ds["securityContext"]["runAsNonRoot"])
        c = ds["containers"][0]
        self.assertEqual(c["readinessProbe"]["grpc"]["port"], 50051)
        self.assertEqual(c["livenessProbe"]["grpc"]["port"], 50051)
        self.assertIn("requests", c["resources"])
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        self.assertTrue(mounts["data"]["readOnly"])
        self.assertEqual(kinds["Service"]["spec"]["clusterIP"], "None")
        # The ConfigMap's config passes the server's validation.
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(kinds["ConfigMap"]["data"]["config.yaml"])
        res = check_config(path)
        self.assertEqual(res.returncode, 0, res.stderr)

    def test_systemd_unit(self):
        path = os.path.join(DEPLOY, "systemd", "shotstream.service")
        with open(path) as f:
            text = f.read()
        for line in ("DynamicUser=yes", "ProtectSystem=strict", "ReadOnlyPaths=-/data",
                     "NoNewPrivileges=yes", "KillSignal=SIGTERM", "ExecReload=/bin/kill -HUP"):
            self.assertIn(line, text)
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze not installed")
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        unit = os.path.join(tmp, "shotstream.service")
        with open(unit, "w") as f:
            f.write(text.replace("/usr/local/bin/shotstream_server",
                                 harness.runfile(harness.SERVER)))
        res = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True,
                             timeout=60)
        problems = [l for l in res.stderr.splitlines() if "shotstream.service" in l]
        self.assertEqual(problems, [], res.stderr)

    def test_dockerfile(self):
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            text = f.read()
        self.assertEqual(len(re.findall(r"^FROM debian:12", text, re.M)), 2)
        self.assertRegex(text, r"(?m)^USER 10001:10001$")
        self.assertIn("--gid 10001", text)  # a fixed group id, not whatever comes next
        self.assertIn("tools/install_deps.sh --build", text)  # not the tests' packages
        self.assertIn("rm -rf /var/lib/apt/lists/* /var/cache/apt/*", text)
        self.assertIn("org.opencontainers.image.version", text)
        # The build context leaves out what builds and tests leave behind.
        with open(os.path.join(DEPLOY, "..", ".dockerignore")) as f:
            ignored = f.read().split()
        for path in (".git", "bazel-*", "tests/js/node_modules"):
            self.assertIn(path, ignored)


if __name__ == "__main__":
    unittest.main()
