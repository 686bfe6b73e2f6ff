#!/usr/bin/env python3
"""The chaos runner's judging rules (chaos_run.judge) on made-up runs: which fault the reports of
a run with two faults must name. No rank is started: each case writes a run folder as the job
and the launcher would (stdout lines of the job, screen lines of the ranks) and a verdict for a
stand-in `vigil diagnose`, then judges it. The cases are runs of the campaign from seed 2000."""
import json
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chaos_run  # noqa: E402

SPEC = chaos_run.load_spec(os.path.join(HERE, "faults.json"))
T0 = 1796524112000  # ms since the epoch: the moments below are offsets from it


def cqe_line(pid, crimer, informer):
    return ("[PID: %d] 2026-12-06-02:28:32.305.632 Vigil_Root_Cause(hccl.heartbeat_error_cqe): "
            "rank %d (192.0.2.2/%d, pid %d) ERROR CQE, class network: A transfer on a link "
            "failed; informer rank %d (192.0.2.2/%d), 0 ms after the event."
            % (pid, crimer, crimer, 1000 + crimer, informer, informer))


class Judge(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="chaos-judge-")
        # A stand-in for vigil: `diagnose --json` prints the verdict the case wrote.
        self.vigil = os.path.join(self.dir, "vigil")
        with open(self.vigil, "w") as f:
            f.write('#!/bin/sh\ncat "%s"\n' % os.path.join(self.dir, "verdict.json"))
        os.chmod(self.vigil, 0o755)
        chaos_run.args_global = types.SimpleNamespace(vigil=self.vigil)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def judge(self, p, out, screen, fault, named=()):
        d = os.path.join(self.dir, "run")
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        with open(os.path.join(d, "out"), "w") as f:
            f.write("".join(line + "\n" for line in out))
        with open(os.path.join(d, "err"), "w") as f:
            f.write("".join(line + "\n" for line in screen))
        verdict = {"verdict": {"fault": fault, "ranks": [
            {"rank": r, "pid": 1000 + r, "role": "root cause"} for r in named]}}
        with open(os.path.join(self.dir, "verdict.json"), "w") as f:
            json.dump(verdict, f)
        run = {"hang": False, "hung_ranks": [], "wall_s": 1.0, "launcher_exit": 137,
               "pids": {r: 1000 + r for r in range(p["n"])}}
        return chaos_run.judge(json.loads(json.dumps(p)), SPEC, d, run)

    # Seeds 2038 and 2187: rank 0 stopped, rank 1 killed 1 s later, before the heartbeat could
    # find rank 0 LOST. No process lived to see either fault: no log holds one, and the only
    # honest verdict is none.
    def stop_then_kill(self, gap_ms):
        return {"seed": 2038, "n": 2, "transport": "tcp", "ops": "broadcast:fp32:1", "faults": [
            {"kind": "stop", "victim": 0, "at_ms": 904, "done": 928, "t_ms": T0 + 928},
            {"kind": "kill", "victim": 1, "at_ms": 1892, "done": 928 + gap_ms,
             "t_ms": T0 + 928 + gap_ms}]}

    def test_no_witness_left_expects_no_fault(self):
        p = self.stop_then_kill(993)
        out = ["READY rank=0 pid=1000", "READY rank=1 pid=1001"]
        res = self.judge(p, out, [], "none")
        self.assertTrue(res["passed"], res["problems"])
        self.assertEqual([e["unseen"] for e in res["expected"]], ["never", "never"])
        # A verdict naming a fault that no log can hold is wrong.
        res = self.judge(p, out, [], "heartbeat_lost", named=[1])
        self.assertFalse(res["passed"])

    def test_witness_alive_past_lost_timeout_must_name_the_stop(self):
        # Rank 1 lived 5.1 s past the stop, past its effect window (the heartbeat's LOST timeout
        # + 2 s): it found rank 0 LOST and its log must say so.
        p = self.stop_then_kill(5100)
        out = ["READY rank=0 pid=1000", "READY rank=1 pid=1001"]
        res = self.judge(p, out, [], "none")
        self.assertFalse(res["passed"])
        res = self.judge(p, out, [], "heartbeat_lost", named=[0])
        self.assertTrue(res["passed"], res["problems"])

    def test_witness_gone_within_the_window_accepts_either(self):
        # Rank 1 killed, rank 0 stopped 200 ms later: rank 0 may or may not have logged the
        # kill before it was stopped.
        p = {"seed": 1, "n": 2, "transport": "tcp", "ops": "allreduce:fp32:7", "faults": [
            {"kind": "kill", "victim": 1, "at_ms": 500, "done": 510, "t_ms": T0 + 510},
            {"kind": "stop", "victim": 0, "at_ms": 700, "done": 710, "t_ms": T0 + 710}]}
        out = ["READY rank=0 pid=1000", "READY rank=1 pid=1001"]
        self.assertTrue(self.judge(p, out, [], "none")["passed"])
        self.assertTrue(self.judge(p, out, [], "heartbeat_lost", named=[1])["passed"])
        self.assertFalse(self.judge(p, out, [], "heartbeat_lost", named=[0])["passed"])

    # Seed 2137: the kill of rank 1 was planned 670 ms before the cut of link 3-4, but the niced
    # runner sent it 566 ms late (done = 2067), after the cut (rank 1 still logged the cut's
    # ERROR CQE). The ranks named the cut, rightly: what happened decides, not the plan.
    def kill_and_cut(self, kill_ms, cut_ms):
        p = {"seed": 2137, "n": 6, "transport": "tcp",
             "ops": "allgather:fp32:4096,alltoall:fp64:7,alltoall:fp64:64", "faults": [
                 {"kind": "kill", "victim": 1, "at_ms": 1501, "done": kill_ms,
                  "t_ms": T0 + kill_ms},
                 {"kind": "cut", "victim": 3, "at_ms": 2173, "peer": 4}]}
        out = ["READY rank=%d pid=%d" % (r, 1000 + r) for r in range(6)]
        out.append("INJECT rank=3 kind=cut detail=4 t=%d" % (T0 + cut_ms))
        out += ["DONE rank=%d pid=%d ops=1873 ok=0" % (r, 1000 + r) for r in (0, 2, 3, 4, 5)]
        screen = [cqe_line(1000 + r, 4 if r == 3 else 3, 3 if r == 3 else 4)
                  for r in (0, 2, 3, 4, 5)]
        return p, out, screen

    def test_cut_done_before_a_late_kill_is_the_answer(self):
        p, out, screen = self.kill_and_cut(2240, 2173)
        res = self.judge(p, out, screen, "error_cqe", named=[3])
        self.assertTrue(res["passed"], res["problems"])
        self.assertIn("cut", [e["kind"] for e in res["expected"]])

    def test_kill_done_first_must_still_be_named(self):
        # The same reports, had the kill really come 670 ms before the cut, are wrong.
        p, out, screen = self.kill_and_cut(1503, 2173)
        res = self.judge(p, out, screen, "error_cqe", named=[3])
        self.assertFalse(res["passed"])
        self.assertEqual([e["kind"] for e in res["expected"]], ["kill"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
