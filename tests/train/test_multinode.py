"""Two machines simulated on one: torchrun, 2 nodes x 1 process, gloo on localhost (issue 13.4).

Killed together mid-run and restarted, the two nodes end with the weights of one process that makes the
same updates (the same global batch through gradient accumulation), to float tolerance.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.models.tiny import tiny_config
from sate.train.trainer import load_training_config, train

pytestmark = pytest.mark.slow

NODE_TAIL = """
torch.set_num_threads(1)
train(load_training_config(sys.argv[1], sys.argv[4:]), sys.argv[2], accelerator="cpu", devices=1, num_nodes=2,
      callbacks=[KillAt()])
"""
# Four batches an epoch over both nodes: two updates an epoch, each of one batch per node.
SETTINGS = ["batch.per_device=1200", "trainer.max_epochs=3", "trainer.checkpoint_every_steps=1"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _two_nodes(script: Path, config: Path, exp: Path, kill_at: int) -> list[subprocess.CompletedProcess]:
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
                               "--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port),
                               str(script), str(config), str(exp), str(kill_at), *SETTINGS, "batch.global=2400"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for node in (0, 1)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def test_two_nodes_killed_and_restarted_end_as_one_process(tmp_path: Path, make_config: Callable[..., Path],
                                                           prepared_data: Path,
                                                           kill_script: Callable[[Path, str], Path]) -> None:
    # No dropout: the nodes draw their random numbers in a different order than one process does.
    config = make_config(tmp_path, "asr", prepared_data, model=tiny_config("asr", dropout=0.0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the nodes: the same float sums
    try:
        train(load_training_config(config, [*SETTINGS, "batch.global=2400"]), tmp_path / "one")  # accumulation 2
    finally:
        torch.set_num_threads(threads)

    script = kill_script(tmp_path / "node.py", NODE_TAIL)
    exp = tmp_path / "two"
    killed = _two_nodes(script, config, exp, kill_at=3)
    assert all(r.returncode != 0 for r in killed), [r.stderr[-1500:] for r in killed]
    saved = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert saved["global_step"] == 3 and saved["sate"]["mid_epoch"] and len(saved["sate"]["rng_ranks"]) == 2
    done = _two_nodes(script, config, exp, kill_at=0)
    assert all(r.returncode == 0 for r in done), [r.stderr[-3000:] for r in done]
    assert "1200 frames per device x 2 device(s) x 1 accumulation = 2400 frames" in done[0].stdout
    assert "taking over" in done[0].stdout and "(step 3, epoch 1)" in done[0].stdout

    one = torch.load(tmp_path / "one" / "checkpoints" / "last.ckpt", weights_only=True)
    two = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert one["global_step"] == two["global_step"] == 6
    for key, value in one["state_dict"].items():
        if "running_" in key or "num_batches" in key:
            continue  # BatchNorm statistics: DDP keeps rank 0's, one process sees both batches
        assert torch.allclose(value, two["state_dict"][key], atol=1e-5), key
