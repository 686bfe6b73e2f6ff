#!/usr/bin/env python3
"""Randomized fault runs of Vigil: one run per seed, faults of FAULTS.md caused for real.

  chaos_run.py --vigil V --job J --out DIR --seeds 1,2,3      (or --count N --first SEED)
  chaos_run.py --vigil V --job J --out DIR --scenarios scenarios.json --names A,B
                                                              (fixed runs, every choice given)
  chaos_run.py --matrix DIR                                   (confusion matrices of DIR)

A seed fixes the rank count (2-8), the transport, the op mix and sizes, the fault(s), their
victims and moments (faults.json beside this file holds the faults, their expected classes and
bounds). For each run the runner starts `vigil run -n N -- chaos_job ...`, injects the faults
from outside (SIGKILL, SIGSTOP, a held port) or has the job do it (link cut, mismatch, late
rank, memory), then checks:
  - hang: every process is gone within its bound (else the run fails and they are killed);
  - every surviving rank's own report (its screen lines and plogs) names the expected class and
    rank;
  - `vigil diagnose` on the run's logs names the expected class and rank;
  - no op that reported success left a wrong result (CORRUPT lines of the job).
Each run writes DIR/run-SEED/result.json (params, expected, reported, verdict); the logs of runs
that passed are removed unless --keep. Exit status: 0 when every run passed.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_spec(path):
    with open(path) as f:
        return json.load(f)


def env_seconds(expr, env):
    """'HCCL_EXEC_TIMEOUT/3', 'VIGIL_HEARTBEAT_LOST_TIMEOUT+2' or a number (ms) -> ms."""
    if isinstance(expr, (int, float)):
        return float(expr)
    m = re.fullmatch(r"([A-Z_]+)(?:([/+])(\d+))?", expr)
    value = float(env[m.group(1)])
    if m.group(2) == "/":
        value /= int(m.group(3))
    elif m.group(2) == "+":
        value += int(m.group(3))
    return value * 1000.0


# ---- choosing a run from its seed -------------------------------------------------------------

def plan(seed, spec):
    rng = random.Random(seed)
    n = rng.randint(2, 8)
    transport = rng.choice(["shm", "tcp"])
    ops = []
    for _ in range(rng.randint(1, 4)):
        count = rng.choice(spec["counts"])
        if count >= 65536 and n > 4:
            count = 4096  # keep 8-rank alltoalls of 64K elements out of a 2-core machine
        ops.append("%s:%s:%d" % (rng.choice(spec["ops"]), rng.choice(spec["dtypes"]), count))
    names = sorted(spec["faults"])
    weights = [spec["faults"][k]["weight"] for k in names]
    first = rng.choices(names, weights)[0]
    faults = [make_fault(first, rng, n, spec, None)]
    if spec["faults"][first]["when"] == "op" and rng.random() < spec["second_fault_probability"]:
        second = rng.choice(spec["second_faults"])
        faults.append(make_fault(second, rng, n, spec, faults[0]))
    return {"seed": seed, "n": n, "transport": transport, "ops": ",".join(ops), "faults": faults}


def make_fault(kind, rng, n, spec, other):
    f = spec["faults"][kind]
    victims = [r for r in range(n) if other is None or r != other["victim"]]
    victim = rng.choice(victims)
    fault = {"kind": kind, "victim": victim, "at_ms": 0}
    if f["when"] == "op":
        low = 200 if other is None else other["at_ms"] + 100
        fault["at_ms"] = rng.randint(low, low + 1500)
    if kind == "cut":
        fault["peer"] = (victim + 1) % n  # the job falls back to the first peer it has a link to
    return fault


def ms_of(x, spec):
    return env_seconds(x, spec["env"]) if isinstance(x, str) else float(x)


def effect_window(fault, spec):
    """[first, last] ms in which the fault takes effect and its peers can see it, from its
    `moment` (when it really was injected, set by judge()) or else its planned `at_ms`."""
    f = spec["faults"][fault["kind"]]
    lo, hi = (ms_of(x, spec) for x in f["effect_ms"])
    if f["when"] == "init":
        return (-1.0, -1.0)
    at = fault.get("moment", fault["at_ms"])
    return (at + lo, at + hi)


def expected_faults(p, spec):
    """The fault(s) whose answer is accepted: the one whose effect window ends first; both when
    the windows overlap."""
    fs = p["faults"]
    if len(fs) == 1:
        return [fs[0]]
    a, b = (effect_window(f, spec) for f in fs)
    if a[1] < b[0]:
        return [fs[0]]
    if b[1] < a[0]:
        return [fs[1]]
    return list(fs)


def set_moments(p):
    """Each fault's `moment`: when it really happened (`t_ms`: the runner's SIGKILL or SIGSTOP,
    the job's INJECT line; one clock, ms since the epoch) when every injected fault has one, else
    the planned `at_ms`. A niced runner on a loaded machine can send its signal half a second
    late, and its clock and the job's start apart: the plan alone can put two faults in the
    wrong order."""
    done = [f for f in p["faults"] if f.get("done", 0) >= 0]
    real = bool(done) and all("t_ms" in f for f in done)
    for f in p["faults"]:
        f["moment"] = f["t_ms"] if real and "t_ms" in f else f["at_ms"]


def unseen(fault, p, spec):
    """Whether any process can have seen the fault. Its witnesses are the ranks other than its
    victim (and the victim, when its own report is checked: both ends of a cut see it). When
    every witness was killed or stopped by the fault's `seen_ms` (the earliest a peer can see
    it: a stopped rank is LOST only after the heartbeat's timeout), no log can hold it:
    "never". When every witness was gone before its effect window closed: "maybe". Else None."""
    fs = spec["faults"][fault["kind"]]
    if fs["when"] != "op":
        return None
    gone = {g["victim"]: g["moment"] for g in p["faults"]
            if g is not fault and g["kind"] in ("kill", "stop") and g.get("done", -1) >= 0}
    witnesses = [r for r in range(p["n"])
                 if r != fault["victim"] or fs["expect"]["victim"] is not None]
    if not witnesses or any(r not in gone for r in witnesses):
        return None
    last = max(gone[r] for r in witnesses)
    if last <= fault["moment"] + ms_of(fs.get("seen_ms", 0), spec):
        return "never"
    if last <= effect_window(fault, spec)[1]:
        return "maybe"
    return None


def expect_of(fault, p, spec):
    """What each observer must report for this fault: faults.json's `expect`, where a fault no
    process can have seen (unseen()) is answered by no fault at all (class `none`), and one that
    may have been seen by either."""
    ex = dict(spec["faults"][fault["kind"]]["expect"])
    how = unseen(fault, p, spec)
    if how is not None:
        for observer in ("others", "diagnose"):
            ex[observer] = ["none"] if how == "never" else ex[observer] + ["none"]
    return ex


# ---- running one -----------------------------------------------------------------------------

def hold_ports(count=32):
    """Listens on `count` consecutive ports; returns (base, sockets)."""
    for _ in range(50):
        first = socket.socket()
        first.bind(("0.0.0.0", 0))
        first.listen(1)
        base = first.getsockname()[1]
        if base > 65504:
            first.close()
            continue
        held = [first]
        for k in range(1, count):
            s = socket.socket()
            try:
                s.bind(("0.0.0.0", base + k))
                s.listen(1)
            except OSError:
                s.close()
                break
            held.append(s)
        if len(held) == count:
            return base, held
        for s in held:
            s.close()
    return None, []


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    st = proc_state(pid)
    return st is not None and st not in ("Z", "X")


def run_one(p, spec, args):
    env_cfg = dict(spec["env"])
    d = os.path.join(args.out, "run-%d" % p["seed"])
    subprocess.run(["rm", "-rf", d])
    os.makedirs(d)
    logs = os.path.join(d, "logs")
    job_args = ["--dir", d, "--ops", p["ops"], "--loop-ms", str(args.loop_ms)]
    late_ms = int(env_cfg["HCCL_EXEC_TIMEOUT"] * 1000 + 3000)
    held = []
    external = []
    for f in p["faults"]:
        kind, v = f["kind"], f["victim"]
        fs = spec["faults"][kind]
        for k, val in fs.get("env_all", {}).items():
            env_cfg[k] = val
        for k, val in fs.get("env_victim", {}).items():
            job_args += ["--env-for", "%d:%s=%s" % (v, k, val)]
        if kind == "late_init":
            job_args += ["--late-init", str(v)]
        elif kind == "late_op":
            job_args += ["--late-op", "%d@%d" % (v, f["at_ms"]), "--late-ms", str(late_ms)]
            if "root" in f:
                job_args += ["--late-root", str(f["root"])]
        elif kind.startswith("mismatch_"):
            job_args += ["--mismatch", "%d@%d:%s" % (v, f["at_ms"], fs["what"])]
        elif kind == "cut":
            job_args += ["--cut", "%d-%d@%d" % (v, f["peer"], f["at_ms"])]
        elif kind == "oom_rlimit":
            job_args += ["--rlimit-as", "%d:%d" % (v, fs["rlimit_mb"])]
        elif kind == "port_taken":
            base, held = hold_ports()
            job_args += ["--root-info", "%d:%d" % (v, base or 0)]
            f["port"] = base
        elif kind == "kill" and f["at_ms"] < 0:
            # Scenarios only: the rank SIGKILLs itself once it is ready, before its first op,
            # so its peers meet it dead while they make its links.
            job_args += ["--kill-self", str(v)]
            f["done"] = 0
        elif kind in ("kill", "stop"):
            external.append(f)
    env = dict(os.environ)
    for k in ("HCCL_DFS_CONFIG", "VIGIL_DEVICE_MEMORY", "VIGIL_FAULT", "VIGIL_TRANSPORT",
              "HCCL_RDMA_QPS_PER_CONNECTION", "HCCL_OP_RETRY_ENABLE"):
        env.pop(k, None)
    for k, val in env_cfg.items():
        env[k] = str(val)
    env["ASCEND_PROCESS_LOG_PATH"] = logs
    # The launcher's own --timeout is a last resort past the runner's bound.
    hard = int(spec["init_bound_s"] + args.loop_ms / 1000 + 60)
    cmd = [args.vigil, "run", "-n", str(p["n"]), "--transport", p["transport"], "--log-dir", logs,
           "--timeout", str(hard), "-q", "--", args.job] + job_args
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write(" ".join("%s=%s" % kv for kv in sorted(env_cfg.items())) + " " + " ".join(cmd) + "\n")
    out = open(os.path.join(d, "out"), "w")
    err = open(os.path.join(d, "err"), "w")
    launch = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
    pids = {}
    t_ready = None
    injected = []
    stopped = []
    # Deadline: init, then each op-time fault's effect window and bound.
    deadline = launch + spec["init_bound_s"]
    for f in p["faults"]:
        fs = spec["faults"][f["kind"]]
        if fs["when"] == "init":
            deadline = launch + spec["init_bound_s"] + fs["bound_s"]
    hang = False
    while proc.poll() is None:
        now = time.monotonic()
        for r in range(p["n"]):
            if r not in pids:
                try:
                    with open(os.path.join(d, "ready-%d" % r)) as f:
                        pids[r] = int(f.read().strip())
                except (OSError, ValueError):
                    pass
        if t_ready is None and len(pids) == p["n"]:
            t_ready = now
            deadline = now + args.loop_ms / 1000.0 + 15
            for f in p["faults"]:
                lo, hi = effect_window(f, spec)
                deadline = max(deadline, now + hi / 1000.0 + spec["faults"][f["kind"]]["bound_s"])
            # While no fault took effect the ops loop until --loop-ms: that is no hang.
        if t_ready is not None:
            for f in external:
                if f.get("done") is None and now >= t_ready + f["at_ms"] / 1000.0:
                    pid = pids[f["victim"]]
                    if alive(pid):
                        os.kill(pid, signal.SIGKILL if f["kind"] == "kill" else signal.SIGSTOP)
                        f["t_ms"] = round(time.time() * 1000)
                        f["done"] = round((now - t_ready) * 1000)
                        # Sent late (a starved runner): its window and bound start now.
                        hi = effect_window(f, spec)[1]
                        deadline = max(deadline, now + (hi - f["at_ms"]) / 1000.0
                                       + spec["faults"][f["kind"]]["bound_s"])
                        injected.append(f)
                        if f["kind"] == "stop":
                            stopped.append(pid)
                    else:
                        f["done"] = -1  # already gone: not injected
            # A stopped victim is let go (killed) once every other rank is gone.
            if stopped and all(not alive(pid) for r, pid in pids.items() if pid not in stopped):
                for pid in stopped:
                    if alive(pid):
                        os.kill(pid, signal.SIGKILL)
        if now > deadline:
            hang = True
            break
        time.sleep(0.05)
    hung_ranks = []
    if hang:
        hung_ranks = [r for r, pid in sorted(pids.items()) if alive(pid) and pid not in stopped]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    proc.wait()
    wall = time.monotonic() - launch
    out.close()
    err.close()
    for s in held:
        s.close()
    return d, {"hang": hang, "hung_ranks": hung_ranks, "wall_s": round(wall, 2),
               "launcher_exit": proc.returncode, "pids": pids}


# ---- reading what each rank said -------------------------------------------------------------

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def plogs_of(logs, channel, pid):
    base = os.path.join(logs, channel, "plog")
    text = []
    try:
        for name in sorted(os.listdir(base)):
            if name.startswith("plog-%d_" % pid):
                text.append(read(os.path.join(base, name)))
    except OSError:
        pass
    return "\n".join(text)


def job_lines(d):
    ranks = {}
    for line in read(os.path.join(d, "out")).splitlines():
        m = re.match(r"(READY|INJECT|CORRUPT|FAIL|DONE|UNDETECTED) rank=(\d+)(.*)", line)
        if m:
            r = ranks.setdefault(int(m.group(2)), {"lines": []})
            r["lines"].append(line)
            kv = dict(re.findall(r"(\w+)=(\S+)", m.group(3)))
            if "pid" in kv:
                r["pid"] = int(kv["pid"])
            r.setdefault(m.group(1), []).append(kv)
    return ranks


def uid_map(logs):
    out = {}
    key = re.compile(r"LocalRank Key Info: userRank\[(\d+)\], hostIp\[([^\]]*)\], devicePhyId\[(\d+)\]")
    base = os.path.join(logs, "run", "plog")
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        for m in key.finditer(read(os.path.join(base, name))):
            out["%s/%s" % (m.group(2), m.group(3))] = int(m.group(1))
    return out


def classify_rank(rank, pid, screen, logs, rules, uids):
    texts = {"screen": "\n".join(l for l in screen.splitlines() if l.startswith("[PID: %d]" % pid)),
             "debug": plogs_of(logs, "debug", pid), "run": plogs_of(logs, "run", pid)}
    for rule in rules["rules"]:
        m = re.search(rule["re"], texts[rule["where"]])
        if not m:
            continue
        cls = rule["class"]
        if cls == "$status":
            cls = rules["status"][m.group(rule["status"])]
        who = rule["rank"]
        if who == "self":
            named = [rank]
        elif isinstance(who, str) and who.startswith("uid"):
            u = m.group(int(who[3:]))
            named = [uids[u]] if u in uids else []
        else:
            named = [int(x) for x in re.findall(r"\d+", m.group(who))]
        return {"class": cls, "ranks": named, "line": m.group(0)[:300]}
    return {"class": "none", "ranks": [], "line": ""}


def diagnose(args, logs, spec):
    try:
        r = subprocess.run([args.vigil, "diagnose", "--json", "--no-progress", logs],
                           capture_output=True, text=True, timeout=120)
        j = json.loads(r.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        return {"class": "error", "ranks": [], "fault": str(e)[:200]}
    v = j.get("verdict") or {}
    fault = v.get("fault", "none")
    roles = spec["diagnose_root_roles"]
    named = [x["rank"] for x in v.get("ranks", []) if x.get("role") in roles and x.get("rank") is not None]
    pids = [x["pid"] for x in v.get("ranks", []) if x.get("role") in roles and x.get("pid") is not None]
    return {"class": spec["diagnose_classes"].get(fault, "other:" + fault), "ranks": named, "pids": pids,
            "fault": fault, "title": v.get("title", "")}


def names_ok(named, fault, names):
    if names == "any":
        return True
    want = {fault["victim"]}
    if names == "pair":
        want.add(fault.get("peer_actual", fault.get("peer")))
    return bool(set(named) & want)


def judge(p, spec, d, run):
    logs = os.path.join(d, "logs")
    ranks = job_lines(d)
    screen = read(os.path.join(d, "err"))
    uids = uid_map(logs)
    for f in p["faults"]:
        if f["kind"] == "cut":
            # The peer this fault's rank really cut (its own INJECT line; another cut of the
            # run is another rank's).
            for r in [ranks.get(f["victim"], {})]:
                for inj in r.get("INJECT", []):
                    if inj.get("kind") == "cut" and inj.get("detail", "none").lstrip("-").isdigit():
                        f["peer_actual"] = int(inj["detail"])
    # An in-job op-time fault that its rank never reported doing (the job ended first, or a
    # cut found no link) was not injected: the other fault is the one to name.
    kinds = {"cut": "cut", "late_op": "late_op", "mismatch_op": "mismatch",
             "mismatch_count": "mismatch", "mismatch_dtype": "mismatch"}
    for f in p["faults"]:
        if f["kind"] in kinds:
            injs = [i for i in ranks.get(f["victim"], {}).get("INJECT", [])
                    if i.get("kind") == kinds[f["kind"]] and i.get("detail") != "none"]
            f["done"] = 0 if injs else -1
            if injs and injs[0].get("t", "").isdigit():
                f["t_ms"] = int(injs[0]["t"])
        elif f["kind"] == "kill" and f["at_ms"] < 0:  # a scenario's rank that kills itself
            for i in ranks.get(f["victim"], {}).get("INJECT", []):
                if i.get("kind") == "kill" and i.get("t", "").isdigit():
                    f["t_ms"] = int(i["t"])
    set_moments(p)
    expected = expected_faults(p, spec)
    if len(expected) == 2 and any(f.get("done") == -1 for f in expected):
        expected = [f for f in expected if f.get("done") != -1] or expected
    elif len(p["faults"]) == 2 and expected[0].get("done") == -1:
        expected = [f for f in p["faults"] if f is not expected[0]]
    primary = expected[0]
    res = {"seed": p["seed"], "params": p, "run": run, "expected": [
        {"kind": f["kind"], "victim": f["victim"], "peer": f.get("peer_actual", f.get("peer")),
         "others": expect_of(f, p, spec)["others"],
         "diagnose": expect_of(f, p, spec)["diagnose"], "unseen": unseen(f, p, spec)}
        for f in expected],
        "ranks": {}, "problems": []}
    gone = {f["victim"] for f in p["faults"] if f["kind"] in ("kill", "stop") and f.get("done", -1) >= 0}
    corrupt = []
    for r in range(p["n"]):
        info = ranks.get(r, {})
        for c in info.get("CORRUPT", []):
            corrupt.append("rank %d %s" % (r, c))
        if r in gone:
            continue
        pid = info.get("pid") or run["pids"].get(r)
        if "DONE" not in info and not run["hang"]:
            res["problems"].append("crash: rank %d ended without its DONE line" % r)
        if pid is None:
            continue
        rep = classify_rank(r, pid, screen, logs, spec["rank_classes"], uids)
        rep["ok_ops"] = bool(info.get("DONE")) and info["DONE"][-1].get("ok") == "1"
        rep["undetected"] = bool(info.get("UNDETECTED"))
        # Which observer is this rank for each accepted fault; the first fault that accepts it wins.
        # One verdict per accepted fault; the best of them counts (ok > unchecked > wrong rank
        # > misclassified).
        verdicts = []
        for f in expected:
            ex = expect_of(f, p, spec)
            observer = "victim" if r == f["victim"] else "others"
            want = ex[observer]
            if want is None:
                verdicts.append("unchecked")
            elif rep["class"] not in want:
                verdicts.append("misclassified")
            else:
                # The victim's own report is checked for its class only (a mismatched rank
                # names the neighbour that caught it; an out-of-memory rank names itself).
                names = ex.get("names_by_class", {}).get(rep["class"], ex["names"])
                verdicts.append("ok" if observer == "victim" or rep["class"] == "none"
                                or names_ok(rep["ranks"], f, names) else "wrong_rank")
        verdict = min(verdicts, key=["ok", "unchecked", "wrong_rank", "misclassified"].index)
        rep["verdict"] = verdict
        res["ranks"][r] = rep
        if verdict in ("misclassified", "wrong_rank"):
            res["problems"].append("rank %d: %s: reported %s %s, expected %s" % (
                r, verdict, rep["class"], rep["ranks"],
                " or ".join("%s of %s" % ("/".join(expect_of(f, p, spec)[
                    "victim" if r == f["victim"] else "others"] or ["-"]), f["victim"])
                    for f in expected)))
        if rep["undetected"]:
            res["problems"].append("rank %d: a mismatched op reported success" % r)
    dg = diagnose(args_global, logs, spec)
    dverdict = "misclassified"
    for f in expected:
        ex = expect_of(f, p, spec)
        if dg["class"] in ex["diagnose"]:
            if dg["class"] == "none":  # a fault no process can have seen names no rank
                dverdict = "ok"
                break
            # A fault before the communicator exists (a root info on a taken port) has no rank
            # to name: the process is named instead.
            victim_pid = ranks.get(f["victim"], {}).get("pid")
            if ex.get("diagnose_names") == "pid" and victim_pid in dg.get("pids", []):
                dverdict = "ok"
                break
            if names_ok(dg["ranks"], f, ex["names"]):
                dverdict = "ok"
                break
            dverdict = "wrong_rank"
    dg["verdict"] = dverdict
    res["diagnose"] = dg
    if dverdict != "ok":
        res["problems"].append("diagnose: %s: %s (%s) %s, expected %s of %s" % (
            dverdict, dg["class"], dg.get("fault"), dg["ranks"],
            "/".join(expect_of(primary, p, spec)["diagnose"]), primary["victim"]))
    for rule in p.get("forbid", []):  # scenarios: screen lines that must not appear
        m = re.search(rule["re"], screen)
        if m:
            res["problems"].append("screen: %s: %s" % (rule["why"], m.group(0)[:160]))
    if run["hang"]:
        res["problems"].append("hang: ranks %s still running past the bound" % run["hung_ranks"])
    if corrupt:
        res["problems"].append("corruption: " + "; ".join(corrupt[:4]))
    res["corrupt"] = corrupt
    res["passed"] = not res["problems"]
    return res


def describe(p):
    fs = " + ".join("%s(r%d%s @%dms%s)" % (f["kind"], f["victim"],
                                           "-%d" % f["peer"] if "peer" in f else "", f["at_ms"],
                                           " root %d" % f["root"] if "root" in f else "")
                    for f in p["faults"])
    if len(p["faults"]) == 2 and all("t_ms" in f for f in p["faults"]):
        fs += " (done %+d ms apart)" % (p["faults"][1]["t_ms"] - p["faults"][0]["t_ms"])
    return "n=%d %s ops=%s %s" % (p["n"], p["transport"], p["ops"], fs)


args_global = None


def main():
    global args_global
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vigil")
    ap.add_argument("--job")
    ap.add_argument("--out", default="chaos-results")
    ap.add_argument("--spec", default=os.path.join(HERE, "faults.json"))
    ap.add_argument("--seeds", help="comma list")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--loop-ms", type=int, default=6000)
    ap.add_argument("--keep", action="store_true", help="keep the logs of passed runs")
    ap.add_argument("--plan", action="store_true", help="print the runs' parameters only")
    ap.add_argument("--scenarios", help="a file of fixed runs (scenarios.json); with --names")
    ap.add_argument("--names", help="comma list of scenario names (default: all of the file)")
    ap.add_argument("--matrix", help="print the confusion matrices of a results folder")
    args = ap.parse_args()
    args_global = args
    if args.matrix:
        import chaos_matrix
        return chaos_matrix.main(args.matrix)
    spec = load_spec(args.spec)
    if args.scenarios:
        fixed = load_spec(args.scenarios)["scenarios"]
        names = args.names.split(",") if args.names else sorted(fixed)
        plans = []
        for name in names:
            sc = fixed[name]
            plans.append({"seed": sc["id"], "n": sc["n"], "transport": sc["transport"],
                          "ops": sc["ops"], "faults": [dict(f) for f in sc["faults"]],
                          "forbid": sc.get("forbid", [])})
    else:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else \
            list(range(args.first, args.first + args.count))
        plans = [plan(seed, spec) for seed in seeds]
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for p in plans:
        seed = p["seed"]
        if args.plan:
            print("seed %d: %s" % (seed, describe(p)))
            continue
        d, run = run_one(p, spec, args)
        res = judge(p, spec, d, run)
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
        status = "PASS" if res["passed"] else "FAIL"
        print("%s seed %d (%.1fs): %s" % (status, seed, run["wall_s"], describe(p)), flush=True)
        for prob in res["problems"]:
            print("    " + prob, flush=True)
        if res["passed"]:
            if not args.keep:
                subprocess.run(["rm", "-rf", os.path.join(d, "logs")])
        else:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
