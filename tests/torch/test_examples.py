"""examples/ddp_train.py on 4 ranks with trnccl and with gloo: the same seed gives the same
losses to float tolerance, and every rank ends with identical parameters."""

import json
import os
import subprocess
import sys
import tempfile

import harness

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "ddp_train.py")


def _train(backend, out):
    cmd = [sys.executable, "-m", "torch_trnccl.run", "--nproc_per_node=4",
           "--master_port=%d" % harness.free_port(), EXAMPLE, "--backend", backend,
           "--steps", "12", "--losses", out]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "parameters identical on every rank" in proc.stdout, proc.stdout
    with open(out) as f:
        return json.load(f)


def test_ddp_train_matches_gloo():
    with tempfile.TemporaryDirectory() as tmp:
        ours = _train("trnccl", os.path.join(tmp, "trnccl.json"))
        gloo = _train("gloo", os.path.join(tmp, "gloo.json"))
    assert ours["identical"] and gloo["identical"]
    assert len(ours["losses"]) == len(gloo["losses"]) == 12
    for step, (a, b) in enumerate(zip(ours["losses"], gloo["losses"])):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (step, a, b)
    assert ours["losses"][-1] < ours["losses"][0]  # it learns
