"""Shared helpers of the CLI script tests (test_cli, test_train, test_predict).

Each test collects failures in FAILS instead of stopping at the first, so one
run reports every broken expectation.
"""
import os
import subprocess
import traceback

CLI = os.environ["PERFCAST"]
FAILS = []


def run(*args, timeout=120):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode < 0:
        FAILS.append("%s: killed by signal %d\n%s" % (" ".join(args), -p.returncode, p.stderr))
    return p


def expect(cond, what):
    if not cond:
        FAILS.append(what)


def expect_rc(p, rc, what):
    expect(p.returncode == rc, "%s: exit %d, expected %d\nstdout: %s\nstderr: %s"
           % (what, p.returncode, rc, p.stdout[-2000:], p.stderr[-2000:]))


def run_checks(checks):
    """Runs each check; an exception is recorded as a failure (with its
    traceback) instead of ending the run, so the report lists everything."""
    for check in checks:
        try:
            check()
        except Exception:  # noqa: BLE001 - any crash of a check is a failure to report
            FAILS.append("check raised:\n" + traceback.format_exc())


def report(ok_message):
    """Prints the failures (or ok_message) and returns the exit status."""
    if FAILS:
        print("%d failure(s):" % len(FAILS))
        for f in FAILS:
            print(" -", f)
        return 1
    print(ok_message)
    return 0


def tiny_models(data, out_dir, seed, layout_coll):
    """synth --scale tiny (seed) of tile:xla and layout_coll into data, and a tiny model of
    each (one epoch, hidden 8, one layer) in out_dir: {collection: model path}."""
    p = run("synth", "--out", data, "--scale", "tiny", "--seed", str(seed), "--threads", "2",
            "--collections", "tile:xla," + layout_coll)
    expect_rc(p, 0, "synth")
    models = {}
    for coll, name in ((layout_coll, "layout.st"), ("tile:xla", "tile.st")):
        models[coll] = os.path.join(out_dir, name)
        p = run("train", "--data", data, "--collection", coll, "--out", models[coll],
                "--threads", "2", "--epochs", "1", "--hidden", "8", "--layers", "1",
                "--configs", "4", "--time-budget", "3")
        expect_rc(p, 0, "train " + coll)
    return models
