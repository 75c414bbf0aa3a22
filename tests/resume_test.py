"""Jobs resumed from a trainer's checkpoint through the real server: consumer processes
train in step (a round: each takes one shot), commit the same step at a barrier every 10
steps, are all SIGKILLed at a random point (sometimes inside a checkpoint, sometimes with
the server SIGKILLed too and restarted with its --job_dir), and another number of
consumers resumes from the last checkpoint's token. The shots trained up to the
checkpoint plus those trained after the resume are the epoch, each exactly once. Tokens
that do not fit are refused before any data, each with its code."""

import os
import random
import signal
import subprocess
import sys
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import harness  # noqa: E402

import shotstream  # noqa: E402
from shotstream.v1 import shotstream_pb2 as pb  # noqa: E402
from shotstream.wire import encode_job_token, job_fingerprint  # noqa: E402

N_SHOTS = 120
IDS = list(range(1, N_SHOTS + 1))
SEED = 11
EVERY = 10  # steps between checkpoints

# A consumer: a rank of the trainer, driven one command a line on stdin ("take": train
# on the next shot; "commit STEP": the checkpoint), answering one line each on stdout.
# Ranks step in lockstep, so none may wait for shots another has prefetched (takeover).
CONSUMER = """
import sys
import shotstream
target, job, resume, native = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
with shotstream.Client(target, native=native) as c:
    it = c.stream_job("d", job, list(range(1, %d + 1)), epoch=0, seed=%d, queue_depth=2,
                      resume=bytes.fromhex(resume) if resume else None, takeover=False)
    try:
        for line in sys.stdin:
            cmd = line.split()
            if cmd[0] == "take":
                shot = next(it, None)
                print("end" if shot is None else "shot %%d" %% shot.shot_id, flush=True)
            elif cmd[0] == "commit":
                print("token", it.commit(int(cmd[1])).hex(), flush=True)
    except shotstream.ShotstreamError as e:
        print("error", e.code().name, e.details().replace("\\n", " "), flush=True)
        sys.exit(1)
""" % (N_SHOTS, SEED)


class Rank:
    """One consumer process and the shots it trained on, by step."""

    def __init__(self, script, env, target, job, resume, native):
        self.proc = subprocess.Popen(
            [sys.executable, script, target, job, resume.hex() if resume else "",
             "1" if native else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env)
        self.ended = False

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self):
        line = self.proc.stdout.readline()
        if not line or line.startswith("error"):
            self.proc.kill()
            raise AssertionError(f"consumer failed: {line!r} {self.proc.stderr.read()}")
        return line.split()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()

    def finish(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        assert self.proc.returncode == 0, err


class Trainer:
    """Drives ranks in step; `trained` maps each step to the shots trained at it."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.trained = {}

    def step(self, step):
        live = [r for r in self.ranks if not r.ended]
        for r in live:
            r.send("take")
        for r in live:
            a = r.answer()
            if a[0] == "end":
                r.ended = True
            else:
                self.trained.setdefault(step, []).append(int(a[1]))
        return any(not r.ended for r in self.ranks)

    def commit(self, step, ranks=None):
        tokens = []
        for r in ranks if ranks is not None else self.ranks:
            r.send(f"commit {step}")
        for r in ranks if ranks is not None else self.ranks:
            a = r.answer()
            tokens.append(bytes.fromhex(a[1]))
        return tokens


class ResumeTest(harness.ConsumerProcessTest):
    N_SHOTS, TRACES, SAMPLES = N_SHOTS, 4, 20
    CONSUMER = CONSUMER

    def server_args(self, port, job_dir):
        return [f"--dataset=d={self.data}/*.sgy", f"--listen=127.0.0.1:{port}",
                f"--job_dir={job_dir}", "--metrics_listen=127.0.0.1:0"]

    def kill_and_resume(self, server, restart, job, before, after, kill_at, inside_commit,
                        native):
        """Trains with `before` ranks until step `kill_at`, kills them (and the server when
        `restart` is given: a function that starts it again), resumes with `after` ranks
        from the last checkpoint; returns (shots trained up to the checkpoint, shots
        trained after the resume, the checkpoint's step)."""
        ranks = [Rank(self.script, self.env, server.target, job, None, native)
                 for _ in range(before)]
        trainer = Trainer(ranks)
        token, checkpoint = None, 0
        step = 0
        while step < kill_at:
            step += 1
            self.assertTrue(trainer.step(step), "the epoch ended before the kill point")
            if step % EVERY == 0:
                if inside_commit and step > EVERY and step + EVERY > kill_at:
                    # Killed inside this checkpoint: some ranks committed, the trainer
                    # never stored the checkpoint (nor its token).
                    trainer.commit(step, ranks[:before // 2])
                    break
                tokens = trainer.commit(step)
                self.assertEqual(len(set(tokens)), 1, "every rank's token is the same")
                self.assertLessEqual(len(tokens[0]), 256)
                token, checkpoint = tokens[0], step
        for r in ranks:
            r.kill()
        self.assertIsNotNone(token, "killed after the first checkpoint")
        before_shots = [s for k, ids in trainer.trained.items() if k <= checkpoint for s in ids]
        if restart is not None:
            server.stop(signal.SIGKILL)
            server = restart()
        resumed = [Rank(self.script, self.env, server.target, job, token, native)
                   for _ in range(after)]
        again = Trainer(resumed)
        step = checkpoint
        while True:
            step += 1
            if not again.step(step):
                break
            if step % EVERY == 0:
                again.commit(step)
        for r in resumed:
            r.finish()
        after_shots = [s for ids in again.trained.values() for s in ids]
        return server, before_shots, after_shots, checkpoint

    def test_killed_at_random_points_the_resumed_job_trains_each_shot_once(self):
        rng = random.Random(int(os.environ.get("RESUME_TEST_SEED", "46")))
        port = harness.free_port()
        job_dir = os.path.join(self.tmp, "jobs")
        args = self.server_args(port, job_dir)
        server = harness.Server(args)
        try:
            # (ranks before, ranks after): 4 -> 3 most often, and 2 -> 5.
            plans = [(4, 3)] * 7 + [(2, 5)] * 3
            for run, (before, after) in enumerate(plans):
                rounds = -(-N_SHOTS // before)  # steps in the epoch at this world size
                inside_commit = run % 4 == 2  # runs 2, 6: killed inside a checkpoint
                kill_at = rng.randrange((2 if inside_commit else 1) * EVERY + 1, rounds - 1)
                restart = run % 3 == 1  # runs 1, 4, 7: the server is SIGKILLed too
                native = run % 2 == 0
                job = f"kill{run}"
                with self.subTest(run=run, before=before, after=after, kill_at=kill_at,
                                  restart=restart, inside_commit=inside_commit,
                                  native=native):
                    server, done, rest, checkpoint = self.kill_and_resume(
                        server, (lambda: harness.Server(args)) if restart else None, job,
                        before, after, kill_at, inside_commit, native)
                    self.assertEqual(len(done), checkpoint * before,
                                     "every rank trained one shot a step to the checkpoint")
                    self.assertEqual(len(done + rest), len(set(done + rest)),
                                     "no shot trained twice by the restored model")
                    self.assertEqual(sorted(done + rest), IDS, "the epoch, each shot once")
                    self.assertTrue(os.path.exists(os.path.join(job_dir, f"d.{job}.0.job")))
            # The last run's server was not restarted: it counted that run's rollback.
            self.assertGreater(server.metrics()["shotstream_job_rollbacks_total"], 0)
        finally:
            server.stop()

    def test_a_resume_ends_the_streams_from_before_it_aborted(self):
        port = harness.free_port()
        with harness.Server(self.server_args(port, os.path.join(self.tmp, "jobs-abort"))) \
                as server, \
                shotstream.Client(server.target) as c:
            old = c.stream_job("d", "abort", IDS, seed=SEED, queue_depth=1)
            first = [next(old).shot_id for _ in range(3)]
            token = old.commit(1)
            new = c.stream_job("d", "abort", IDS, seed=SEED, resume=token)
            got = [next(new).shot_id]
            with self.assertRaises(shotstream.ShotstreamError) as cm:
                for _ in old:
                    pass
            self.assertEqual(cm.exception.code(), grpc.StatusCode.ABORTED)
            self.assertIn("resumed from step 1", cm.exception.details())
            got += [s.shot_id for s in new]
            self.assertEqual(sorted(first + got), IDS)
            m = server.metrics()
            self.assertEqual(m["shotstream_job_rollbacks_total"], 1)
            self.assertGreaterEqual(m["shotstream_job_commits_total"], 1)

    def test_tokens_that_do_not_fit_are_refused_before_any_data(self):
        port = harness.free_port()
        job_dir = os.path.join(self.tmp, "jobs-bad")
        with harness.Server(self.server_args(port, job_dir)) as server, \
                shotstream.Client(server.target) as c:
            it = c.stream_job("d", "bad", IDS, seed=SEED)
            next(it)
            good = it.commit(5)
            it.close()
            fp = job_fingerprint(IDS)
            tampered = bytearray(good)
            tampered[len(good) // 2] ^= 0x01
            cases = {
                "tampered": (bytes(tampered), grpc.StatusCode.INVALID_ARGUMENT, "altered"),
                "truncated": (good[:-3], grpc.StatusCode.INVALID_ARGUMENT, "cut or padded"),
                "not a token": (b"hello", grpc.StatusCode.INVALID_ARGUMENT, "not a job token"),
                "another job": (encode_job_token("d", "other", 0, 5, SEED, fp),
                                grpc.StatusCode.INVALID_ARGUMENT, "'other'"),
                "another dataset": (encode_job_token("e", "bad", 0, 5, SEED, fp),
                                    grpc.StatusCode.INVALID_ARGUMENT, "'e'"),
                "another seed": (encode_job_token("d", "bad", 0, 5, SEED + 1, fp),
                                 grpc.StatusCode.INVALID_ARGUMENT, "seed"),
                "other ids": (encode_job_token("d", "bad", 0, 5, SEED, fp ^ 1),
                              grpc.StatusCode.INVALID_ARGUMENT, "another set of shot ids"),
                "a step not on record": (encode_job_token("d", "bad", 0, 7, SEED, fp),
                                         grpc.StatusCode.FAILED_PRECONDITION,
                                         "no commit at step 7"),
            }
            for native in (True, False):
                with shotstream.Client(server.target, native=native) as client:
                    for name, (token, code, says) in cases.items():
                        with self.subTest(native=native, case=name):
                            with self.assertRaises(shotstream.ShotstreamError) as cm:
                                next(client.stream_job("d", "bad", IDS, seed=SEED,
                                                       resume=token))
                            self.assertEqual(cm.exception.code(), code,
                                             cm.exception.details())
                            self.assertIn(says, cm.exception.details())
            # The server checks too, whatever a client does: the raw RPC.
            channel = grpc.insecure_channel(server.target)
            call = channel.stream_stream(
                "/shotstream.v1.ShotStream/StreamJob",
                request_serializer=pb.JobRequest.SerializeToString,
                response_deserializer=pb.ShotChunk.FromString)
            for name, (token, code, says) in cases.items():
                with self.subTest(raw=name):
                    start = pb.JobRequest(start=pb.JobStart(
                        dataset="d", job="bad", shot_ids=IDS, epoch=0, seed=SEED,
                        queue_depth=1, resume=token))
                    with self.assertRaises(grpc.RpcError) as cm:
                        next(call(iter([start]), timeout=30))
                    self.assertEqual(cm.exception.code(), code, cm.exception.details())
                    self.assertIn(says, cm.exception.details())
            channel.close()
            # The good token still resumes: the refusals changed nothing.
            self.assertEqual(len(list(c.stream_job("d", "bad", IDS, seed=SEED,
                                                   resume=good))), N_SHOTS - 1)
        # A server without a job directory has no record of a job it does not hold.
        with harness.Server([f"--dataset=d={self.data}/*.sgy"]) as memory, \
                shotstream.Client(memory.target) as c:
            with self.assertRaises(shotstream.ShotstreamError) as cm:
                next(c.stream_job("d", "bad", IDS, seed=SEED, resume=good))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("--job_dir", cm.exception.details())
        # Another job directory: no file for the job.
        with harness.Server(self.server_args(harness.free_port(),
                                             os.path.join(self.tmp, "jobs-elsewhere"))) \
                as elsewhere, shotstream.Client(elsewhere.target) as c:
            with self.assertRaises(shotstream.ShotstreamError) as cm:
                next(c.stream_job("d", "bad", IDS, seed=SEED, resume=good))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("no record", cm.exception.details())


if __name__ == "__main__":
    unittest.main()
