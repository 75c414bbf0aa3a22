"""Builds the server's container image with podman from this checkout and smoke-tests it as
an operator would: `bazel run //:image_test` (.ci/run runs it; it fails, never skips, where
podman cannot run).

- Base images: debian:12 and debian:12-slim where podman has them, else made here from
  Debian's archive (debootstrap --variant=minbase bookworm, from the mirror apt uses) and
  kept in podman's storage for the next run.
- Build: `podman build -f deploy/Dockerfile` (host network for apt inside the build).
- Run: a survey written by segyio mounted read-only, the config mounted read-only, host
  network, read-only root filesystem, every capability dropped, no new privileges.
- Checks: health SERVING for each service name the Kubernetes manifest's gRPC probes use;
  the host's CLI lists the dataset and fetches every shot, equal bit for bit to segyio's
  reading of the file; the process runs as uid 10001 with no effective capability; the
  root filesystem refuses writes; `podman stop` ends it with exit code 0 within drain +
  grace; the image's size (goal <= 150 MB) is printed with what it is made of.
Environment facts of this machine kind (not of the image): crun refuses the hybrid cgroup
setup (runc is used), and the default rlimits cannot be raised (they are given)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import segyio
import yaml

import harness  # the test harness: the CLI, health, free ports

IMAGE = "shotstream:ci"
NAME = "shotstream-image-test"
PODMAN = ["podman", "--runtime=runc", "--cgroup-manager=cgroupfs", "--events-backend=file"]
ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
GRACE, DRAIN = 3, 0.5


def run(args, check=True, **kw):
    res = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and res.returncode != 0:
        raise SystemExit(f"image test: {' '.join(args)} failed ({res.returncode}):\n"
                         f"{res.stdout[-4000:]}\n{res.stderr[-4000:]}")
    return res


def podman(*args, check=True, **kw):
    return run(PODMAN + list(args), check=check, **kw)


def mirror():
    """The Debian mirror apt uses here (deb822 URIs: or a sources.list line)."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        try:
            with open(path) as f:
                for line in f:
                    words = line.split()
                    if words[:1] == ["URIs:"] or (words[:1] == ["deb"] and len(words) > 1):
                        return words[1]
        except OSError:
            pass
    raise SystemExit("image test: no Debian mirror in /etc/apt (needed to make debian:12)")


def ensure_base_images():
    have = podman("image", "exists", "debian:12", check=False).returncode == 0
    have_slim = podman("image", "exists", "debian:12-slim", check=False).returncode == 0
    if have and have_slim:
        return
    root = tempfile.mkdtemp(prefix="shotstream-rootfs-")
    print(f"image test: making debian:12 with debootstrap from {mirror()}", flush=True)
    run(["debootstrap", "--variant=minbase", "bookworm", root, mirror()], timeout=1800)
    # As the official slim image is: no downloaded packages or lists, and dpkg told to
    # leave documentation, manuals and translations out of what is installed later.
    for d in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
              "usr/share/info", "usr/share/locale"):
        if not os.path.isdir(os.path.join(root, d)):
            continue
        for entry in os.listdir(os.path.join(root, d)):
            p = os.path.join(root, d, entry)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            elif entry not in ("lock", "partial"):
                os.remove(p)
    for n in range(1, 9):  # packages (OpenJDK) link manuals there even when excluded
        os.makedirs(os.path.join(root, f"usr/share/man/man{n}"), exist_ok=True)
    with open(os.path.join(root, "etc/dpkg/dpkg.cfg.d/slim"), "w") as f:
        f.write("path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n"
                "path-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\n"
                "path-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n")
    with open(os.path.join(root, "etc/apt/apt.conf.d/docker-clean"), "w") as f:
        f.write('DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb || true"; };\n'
                'Binary::apt::APT::Keep-Downloaded-Packages "false";\n')
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
    podman("import", "-", "debian:12", stdin=tar.stdout, timeout=600)
    tar.wait()
    shutil.rmtree(root, ignore_errors=True)
    podman("tag", "debian:12", "debian:12-slim")


def main():
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
    if shutil.which("podman") is None:
        raise SystemExit("image test: podman is not installed (tools/install_deps.sh)")
    info = podman("info", check=False)
    if info.returncode != 0:
        raise SystemExit(f"image test: podman cannot run here: {info.stderr.strip()}")
    ensure_base_images()
    with open(os.path.join(workspace, "bazel", "version.bzl")) as f:
        version = next((l.split('"')[1] for l in f if "SHOTSTREAM_VERSION" in l and '"' in l), "dev")
    start = time.time()
    podman("build", "--network=host", *ULIMITS, "--build-arg", f"VERSION={version}",
           "-f", os.path.join(workspace, "deploy", "Dockerfile"), "-t", IMAGE, workspace,
           timeout=3600)
    print(f"image test: built {IMAGE} in {time.time() - start:.0f} s", flush=True)

    tmp = tempfile.mkdtemp(prefix="shotstream-image-test-")
    data, config = os.path.join(tmp, "data"), os.path.join(tmp, "config")
    cache = os.path.join(tmp, "cache")  # the catalogs: the only place the server writes
    os.makedirs(data)
    os.makedirs(config)
    os.makedirs(cache)
    os.chown(cache, 10001, 10001)
    survey = os.path.join(data, "line.sgy")
    harness.write_survey(survey, 5, [21, 22, 23], 30, 400)
    port = harness.free_port()
    with open(os.path.join(config, "config.yaml"), "w") as f:
        f.write(f"listen: 127.0.0.1:{port}\ngrace_period: {GRACE}s\ndrain_delay: {DRAIN}s\n"
                "catalog_dir: /var/cache/shotstream\n"
                "datasets:\n  - {name: line, files: /data/line.sgy}\n")
    for d in (data, config):
        os.chmod(d, 0o755)
    podman("rm", "-f", NAME, check=False)
    podman("run", "-d", "--name", NAME, "--network=host", "--read-only", "--cap-drop=ALL",
           "--security-opt=no-new-privileges", *ULIMITS,
           "-v", f"{data}:/data:ro", "-v", f"{config}:/etc/shotstream:ro",
           "-v", f"{cache}:/var/cache/shotstream", IMAGE)
    target = f"127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if harness.health(target) == harness.SERVING:
                    break
            except Exception:  # not listening yet
                pass
            state = podman("inspect", NAME, "--format", "{{.State.Running}}").stdout.strip()
            if state != "true" or time.time() > deadline:
                logs = podman("logs", NAME, check=False)
                raise SystemExit(f"image test: the server did not serve: {logs.stdout}{logs.stderr}")
            time.sleep(0.2)
        # The Kubernetes probes' service names, each answered SERVING.
        with open(os.path.join(workspace, "deploy", "k8s", "shotstream.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        pod = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
        probes = [(c["name"], kind, c[kind]) for c in pod["containers"]
                  for kind in ("readinessProbe", "livenessProbe", "startupProbe") if kind in c]
        assert probes, "no probes in the manifest"
        for container, kind, probe in probes:
            service = probe["grpc"].get("service", "")
            status = harness.health(target, service)
            assert status == harness.SERVING, f"{container} {kind} service {service!r}: {status}"
        # The host's CLI against the container, against segyio's reading of the file.
        ls = harness.cli("ls", f"--target={target}").stdout
        assert "line" in ls, ls
        out = os.path.join(tmp, "fetched")
        harness.cli("fetch", f"--target={target}", "--dataset=line", f"--out={out}")
        want = harness.segyio_shots([survey])
        for sid, (samples, _) in want.items():
            got = np.load(os.path.join(out, f"shot_{sid}.npy"))
            assert got.dtype == np.float32 and got.tobytes() == samples.astype("<f4").tobytes(), sid
        # Who it runs as, with what.
        uid = podman("exec", NAME, "id", "-u").stdout.strip()
        gid = podman("exec", NAME, "id", "-g").stdout.strip()
        assert (uid, gid) == ("10001", "10001"), (uid, gid)
        caps = podman("exec", NAME, "grep", "CapEff", "/proc/1/status").stdout.split()
        assert caps[-1] == "0000000000000000", caps
        assert podman("exec", NAME, "touch", "/probe", check=False).returncode != 0, \
            "the root filesystem took a write"
        assert podman("inspect", NAME, "--format",
                      "{{.HostConfig.ReadonlyRootfs}}").stdout.strip() == "true"
        # SIGTERM: drain, grace, exit 0.
        start = time.time()
        podman("stop", "-t", str(int(DRAIN + GRACE + 10)), NAME)
        took = time.time() - start
        code = podman("inspect", NAME, "--format", "{{.State.ExitCode}}").stdout.strip()
        assert code == "0", f"exit code {code}: {podman('logs', NAME, check=False).stderr}"
        assert took < DRAIN + GRACE + 2, f"podman stop took {took:.1f} s"
    finally:
        podman("rm", "-f", NAME, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    size = int(podman("image", "inspect", IMAGE, "--format", "{{.Size}}").stdout.strip())
    base = int(podman("image", "inspect", "debian:12-slim", "--format", "{{.Size}}").stdout.strip())
    print(f"image test: {IMAGE} {size / 1e6:.1f} MB ({base / 1e6:.1f} MB of it the base "
          f"debian:12-slim), goal <= 150 MB: {'met' if size <= 150e6 else 'NOT met'}; "
          f"ran as 10001:10001 with no capability on a read-only root, served every shot "
          f"exact, health SERVING for {len(probes)} probes, stopped with 0 in {took:.1f} s")
    print(json.dumps({"image_bytes": size, "base_bytes": base, "stop_seconds": took}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
