#!/usr/bin/env python3
"""perfcast's own artifacts under edits and corruption (issue #18).

A checkpoint whose metadata was edited (the checksum dropped, as a hand edit
with another tool would) cannot make eval, predict, rank or --resume allocate
more than the file holds nor run long: hidden 12000, layers 100000, an
ensemble of 64 with one member's tensors; each fails in seconds with a
message, and the peak RSS of every child stays small. A byte flipped in a
checkpoint or MODEL.state that keeps its checksum is refused ("checksum
mismatch"). The state's scalars and order are range-checked, and --resume
refuses changed options that alter the trajectory or the architecture
(--encode, --cfg-attention, --dedup), naming the option, while a moved
dataset (same files, other path) resumes.

Environment (tests/CMakeLists.txt): PERFCAST, PC_TEST_TMP.
"""
import json
import os
import resource
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ensemble_avg import st_load, st_save  # noqa: E402  (numpy safetensors, no checksum)
from clitest import FAILS, expect, expect_rc, report, run, run_checks  # noqa: E402

TMP = os.environ.get("PC_TEST_TMP", "/tmp/pc_test_hostile")
DATA = os.path.join(TMP, "data")
TRAIN = ["--hidden", "16", "--layers", "1", "--threads", "2", "--progress", "never"]
MAX_RSS_MB = 1024


def child_peak_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def fails_fast(args, what, needle):
    t0 = time.time()
    p = run(*args, timeout=60)
    dt = time.time() - t0
    expect(p.returncode == 1, "%s: exit %d, expected 1: %s" % (what, p.returncode, p.stderr))
    expect(needle in p.stderr, "%s: message lacks %r: %r" % (what, needle, p.stderr))
    expect(": :" not in p.stderr, "%s: ': :' in %r" % (what, p.stderr))
    expect(dt < 10, "%s: took %.1f s" % (what, dt))
    return p


def edited(model, name, edit):
    """A copy of model with its 'perfcast' metadata edited (no checksum: written by numpy)."""
    t, meta = st_load(model)
    meta.pop("pc_crc32", None)
    pc = json.loads(meta["perfcast"])
    edit(pc)
    meta["perfcast"] = json.dumps(pc)
    out = os.path.join(TMP, name)
    st_save(out, t, meta)
    return out


def users_of(model):
    """The commands that load a checkpoint, with model."""
    npz = os.path.join(DATA, "npz", "tile", "xla", "valid")
    f = os.path.join(npz, sorted(os.listdir(npz))[0])
    return [("eval", ["eval", "--model", model, "--data", DATA]),
            ("predict", ["predict", "--model", model, "--data", DATA, "--split", "valid",
                         "--out", os.path.join(TMP, "p.csv")]),
            ("rank", ["rank", "--model", model, f])]


def check_edited_metadata(model):
    def arch(key, v):
        return lambda pc: pc["architecture"].__setitem__(key, v)
    cases = [("hidden12000", arch("hidden", 12000), "bad sizes"),
             ("hidden8000", arch("hidden", 8000), "parameter tensors hold"),
             ("layers100000", arch("layers", 100000), "bad sizes"),
             ("layers200", arch("layers", 200), "parameter tensors hold"),
             ("emb1e6", arch("emb_dim", 1000000), "bad sizes"),
             ("ens64", lambda pc: pc.__setitem__("ensemble", 64), "parameter tensors hold")]
    for name, edit, needle in cases:
        bad = edited(model, name + ".st", edit)
        for what, args in users_of(bad):
            fails_fast(args, "%s %s" % (what, name), needle)
        expect(not os.path.exists(os.path.join(TMP, "p.csv")), "predict left an output")
    plain = edited(model, "plain.st", lambda pc: None)  # the same model without a checksum
    p = run("eval", "--model", plain, "--data", DATA)
    expect_rc(p, 0, "a checkpoint without a checksum (another writer) still loads")
    expect(child_peak_mb() < MAX_RSS_MB, "peak RSS of a child %.0f MB" % child_peak_mb())


def flipped(src, name, where):
    raw = bytearray(open(src, "rb").read())
    raw[where(raw)] ^= 0x10
    out = os.path.join(TMP, name)
    open(out, "wb").write(raw)
    return out


def check_checksums(model, state):
    bad = flipped(model, "flip_data.st", lambda raw: len(raw) - 3)
    for what, args in users_of(bad):
        fails_fast(args, what + " of a flipped byte", "checksum mismatch")
    # a digit of the architecture in the metadata, checksum kept
    bad = flipped(model, "flip_meta.st", lambda raw: raw.find(b'\\"hidden\\":') + 11)
    fails_fast(["eval", "--model", bad, "--data", DATA], "edited metadata, checksum kept",
               "checksum mismatch")
    out = os.path.join(TMP, "r.st")
    shutil.copy(state, out + ".state")
    raw = bytearray(open(out + ".state", "rb").read())
    raw[len(raw) - 5] ^= 0x01  # the end of the data: an AdamW moment or the order
    open(out + ".state", "wb").write(raw)
    fails_fast(["train", "--data", DATA, "--collection", "tile:xla", "--out", out,
                "--epochs", "3", "--resume", *TRAIN], "resume of a flipped state",
               "checksum mismatch")


def restate(state, out, edit):
    """MODEL.state for out with its resume scalars edited (rewritten without a checksum)."""
    t, meta = st_load(state)
    t = {k: v.copy() for k, v in t.items()}
    meta.pop("pc_crc32", None)
    js = json.loads(meta["perfcast_state"])
    edit(js, t)
    meta["perfcast_state"] = json.dumps(js)
    st_save(out + ".state", t, meta)


def check_state_fields(state):
    out = os.path.join(TMP, "s.st")
    resume = ["train", "--data", DATA, "--collection", "tile:xla", "--out", out, "--epochs",
              "3", "--resume", *TRAIN]
    for name, edit, needle in (
            ("epoch", lambda js, t: js.__setitem__("epoch", -5), "'epoch' = -5"),
            ("step", lambda js, t: js.__setitem__("step", 1e300), "'step'"),
            ("rng", lambda js, t: js.__setitem__("rng", "12x"), "'rng'"),
            ("order", lambda js, t: t["state.order"].__setitem__(1, t["state.order"][0]),
             "'order'")):
        restate(state, out, edit)
        fails_fast(resume, "state field " + name, needle)


def check_resume_options(state):
    out = os.path.join(TMP, "o.st")
    base = ["train", "--data", DATA, "--collection", "tile:xla", "--out", out, "--epochs", "3",
            "--resume", *TRAIN]
    for flags, needle in ((["--encode", "pad"], "encode"),
                          (["--cfg-attention", "2"], "cfg-attention"),
                          (["--dedup"], "dedup=")):
        shutil.copy(state, out + ".state")
        p = run(*base, *flags, timeout=120)
        expect(p.returncode != 0 and needle in p.stderr,
               "resume with %s: exit %d, %r" % (flags, p.returncode, p.stderr))
    # the same files under another path: resumes
    moved = os.path.join(TMP, "moved")
    shutil.copytree(DATA, moved)
    shutil.copy(state, out + ".state")
    p = run("train", "--data", moved, "--collection", "tile:xla", "--out", out, "--epochs", "3",
            "--resume", *TRAIN, timeout=300)
    expect_rc(p, 0, "resume from a moved dataset")
    shutil.rmtree(moved)


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    expect_rc(run("synth", "--out", DATA, "--scale", "tiny", "--seed", "4", "--threads", "2",
                  "--collections", "tile:xla"), 0, "synth")
    model = os.path.join(TMP, "m.st")
    expect_rc(run("train", "--data", DATA, "--collection", "tile:xla", "--out", model,
                  "--epochs", "1", *TRAIN, timeout=300), 0, "train")
    stopped = os.path.join(TMP, "stopped.st")
    p = run("train", "--data", DATA, "--collection", "tile:xla", "--out", stopped, "--epochs",
            "3", "--stop-after-steps", "3", *TRAIN, timeout=300)
    state = stopped + ".state"
    expect(os.path.isfile(state), "a stopped run keeps its state: %r" % p.stdout[-500:])
    if FAILS:
        return report("")
    run_checks([lambda: check_edited_metadata(model), lambda: check_checksums(model, state),
                lambda: check_state_fields(state), lambda: check_resume_options(state)])
    code = report("hostile artifacts: ok")
    if not FAILS:
        shutil.rmtree(TMP, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
