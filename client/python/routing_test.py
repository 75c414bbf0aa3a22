"""shotstream.routing: the retry cases the C++ client shares, shot routing and rerouting."""

import os
import unittest

import grpc

from shotstream import RetryBudget, ShotstreamError
from shotstream import routing


def cases():
    root = os.environ.get("TEST_SRCDIR", "")
    path = os.path.join(root, os.environ.get("TEST_WORKSPACE", "shotstream"),
                        "client", "testdata", "retry_cases.txt")
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                words = line.split()
                yield line.strip(), int(words[0]), words[1:]


class RetryBudgetTest(unittest.TestCase):
    def test_follows_the_cases_the_cpp_client_follows(self):
        n = 0
        for line, retries, events in cases():
            budget = RetryBudget(retries)
            for e in events:
                if e == "shot":
                    budget.delivered()
                elif e == "x":
                    self.assertIsNone(budget.failed(), line)
                else:
                    self.assertAlmostEqual(budget.failed(), int(e) / 1000, msg=line)
            n += 1
        self.assertGreaterEqual(n, 9)


class RouteTest(unittest.TestCase):
    def test_each_shot_goes_to_a_holder_and_shared_shots_are_spread(self):
        route, holders = routing.route("d", [1, 2, 3, 3], [[1, 3], None, [2, 3]])
        # Shot 3, held by targets 0 and 2, comes from each in turn (the k-th request from
        # holder k mod 2).
        self.assertEqual(route, [0, 2, 0, 2])
        self.assertEqual(holders, {1: [0], 3: [0, 2], 2: [2]})

    def test_a_shot_nobody_holds_is_not_found(self):
        with self.assertRaises(ShotstreamError) as e:
            routing.route("d", [9], [[1]])
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("no shot 9", e.exception.details())

    def test_reroute_moves_the_rest_to_other_holders_only(self):
        route, holders = [0, 0, 0], {1: [0], 2: [0, 1], 3: [0, 1]}
        given_up = set()
        self.assertTrue(routing.reroute(route, holders, [1, 2, 3], 1, 0, given_up))
        self.assertEqual(route, [0, 1, 1])
        self.assertFalse(routing.reroute(route, holders, [1, 2, 3], 1, 1, given_up))

    def test_targets_need_a_port(self):
        routing.check_target("127.0.0.1:50051")
        routing.check_target("[::1]:50051")
        routing.check_target("unix:/tmp/s")
        for bad in ("localhost", "host:0", "[::1:5"):
            with self.assertRaises(ValueError):
                routing.check_target(bad)


if __name__ == "__main__":
    unittest.main()
