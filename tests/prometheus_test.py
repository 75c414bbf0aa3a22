"""A real Prometheus (Debian's package) scrapes a real server: after a bench, PromQL over
Prometheus's HTTP API gives the bytes the bench received, a rate, the active streams and
the datasets' readiness; `promtool check metrics` passes the exposition and `promtool
check rules` the shipped alert rules (deploy/prometheus/), which Prometheus loads."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

RULES = "deploy/prometheus/shotstream.rules.yml"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        os.makedirs(cls.data)
        harness.write_survey(os.path.join(cls.data, "a.sgy"), 5, list(range(1, 9)), 40, 500)

    def setUp(self):
        for tool in ("prometheus", "promtool"):
            if shutil.which(tool) is None:
                self.skipTest(f"{tool} is not installed (Debian's prometheus package; "
                              "tools/install_deps.sh installs it)")

    def test_rules_pass_promtool(self):
        res = subprocess.run(["promtool", "check", "rules", harness.runfile(RULES)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("SUCCESS: 5 rules found", res.stdout)

    def test_prometheus_scrapes_what_the_bench_saw(self):
        with harness.Server([f"--dataset=d={self.data}/*.sgy",
                             "--metrics_listen=127.0.0.1:0"]) as server:
            port = server.metrics_port()
            exposition = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=5).read()
            res = subprocess.run(["promtool", "check", "metrics"], input=exposition,
                                 capture_output=True, timeout=60)
            self.assertEqual(res.returncode, 0, (res.stdout + res.stderr).decode())

            web = free_port()
            config = os.path.join(self.tmp, "prometheus.yml")
            with open(config, "w") as f:
                f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [{harness.runfile(RULES)}]
scrape_configs:
  - job_name: shotstream
    static_configs: [{{targets: ['127.0.0.1:{port}']}}]
""")
            prom = subprocess.Popen(
                ["prometheus", f"--config.file={config}",
                 f"--storage.tsdb.path={os.path.join(self.tmp, 'tsdb')}",
                 f"--web.listen-address=127.0.0.1:{web}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                def query(q):
                    url = (f"http://127.0.0.1:{web}/api/v1/query?" +
                           urllib.parse.urlencode({"query": q}))
                    try:
                        body = json.load(urllib.request.urlopen(url, timeout=5))
                    except OSError:
                        return None  # not listening yet
                    self.assertEqual(body["status"], "success", body)
                    return body["data"]["result"]

                def value(q):
                    r = query(q)
                    return float(r[0]["value"][1]) if r else None

                wait_for(lambda: value('up{job="shotstream"}') == 1, timeout=60,
                         what="Prometheus's first scrape of the server")
                bench = harness.cli_bench(server.target, "d", repeat=3)
                # The bench's bytes are the float32 sample bytes the server sent.
                wait_for(lambda: value("shotstream_sample_bytes_sent_total") == bench["bytes"],
                         timeout=60, what="a scrape after the bench")
                self.assertEqual(value("shotstream_shots_sent_total"), bench["shots"])
                self.assertGreater(value("rate(shotstream_sample_bytes_sent_total[1m])"), 0)
                self.assertEqual(value("shotstream_active_streams"), 0)
                self.assertEqual(value('shotstream_dataset_ready{dataset="d"}'), 1)
                # The shipped rules are loaded and none of them fires on a healthy server.
                rules = json.load(urllib.request.urlopen(
                    f"http://127.0.0.1:{web}/api/v1/rules", timeout=5))["data"]["groups"]
                self.assertEqual(sum(len(g["rules"]) for g in rules), 5)
                self.assertEqual(query("ALERTS"), [])
            finally:
                prom.terminate()
                prom.wait(timeout=30)


if __name__ == "__main__":
    unittest.main()
