#!/usr/bin/env python3
"""
The golden reference files (tests/golden/golden_*.npz) provably come from
tests/golden/make_golden.py, make_attention_golden.py and make_loss_golden.py:
rerun them into a temporary folder and compare every array with the committed
files (same keys, dtypes and shapes; inputs and parameters bitwise, NaN equal
to NaN, computed values to
1e-12 relative, which allows last-bit differences of another torch/BLAS
build). Skips (77) without torch.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch  # noqa: F401
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")
COMPUTED = ("scores", "loss", "step_loss")
# keys of computed values in golden_attention.npz: out.<case>, loss.<case> (and g.*)
COMPUTED_PREFIXES = ("g.", "out.", "loss.")
GENERATORS = ("make_golden.py", "make_attention_golden.py", "make_loss_golden.py")


def main():
    tmp_root = os.environ.get("PC_TEST_TMP")
    if tmp_root:
        os.makedirs(tmp_root, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tmp_root) as tmp:
        for gen in GENERATORS:
            subprocess.run([sys.executable, os.path.join(GOLDEN, gen), tmp], check=True,
                           stdout=subprocess.DEVNULL)
        fresh = sorted(f for f in os.listdir(tmp) if f.endswith(".npz"))
        committed = sorted(f for f in os.listdir(GOLDEN) if f.startswith("golden_") and
                           f.endswith(".npz"))
        if fresh != committed:
            print(f"FAIL: files differ: generated {fresh}, committed {committed}")
            return 1
        bad = 0
        for name in fresh:
            a = np.load(os.path.join(tmp, name))
            b = np.load(os.path.join(GOLDEN, name))
            if sorted(a.files) != sorted(b.files):
                print(f"FAIL {name}: keys differ: {sorted(set(a.files) ^ set(b.files))}")
                bad += 1
                continue
            worst = 0.0
            for k in a.files:
                x, y = a[k], b[k]
                if x.dtype != y.dtype or x.shape != y.shape:
                    print(f"FAIL {name}:{k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
                    bad += 1
                elif k.startswith(COMPUTED_PREFIXES) or k in COMPUTED:
                    d = np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-30), initial=0.0)
                    worst = max(worst, float(d))
                    if not np.allclose(x, y, rtol=1e-12, atol=1e-15):
                        print(f"FAIL {name}:{k}: max rel diff {d:.3e}")
                        bad += 1
                elif not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                    print(f"FAIL {name}:{k}: not bitwise equal")
                    bad += 1
            print(f"{name}: {len(a.files)} arrays, max rel diff of computed values {worst:.3e}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
