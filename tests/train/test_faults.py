"""Out of memory in the forward pass, the backward pass or the optimizer step: the update is skipped as if its
batch never existed, counted, and repeated ones stop with the largest batch that fitted (issue 13.2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.errors import SateError
from sate.models.tiny import tiny_config
from sate.train.trainer import load_training_config, train

pytestmark = pytest.mark.slow
MakeConfig = Callable[..., Path]


def _oom() -> torch.OutOfMemoryError:
    return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected by a test)")


def inject_oom(monkeypatch: pytest.MonkeyPatch, forward: set[int] = frozenset(), backward: set[int] = frozenset(),
               step: set[int] = frozenset()) -> None:
    """Raise torch.OutOfMemoryError on the given (1-based) training forward calls, in the backward pass of the
    given forward calls, and in the given calls of Adam's update."""
    import sate.train.setup as setup

    build = setup.build_for_training
    calls = {"forward": 0, "step": 0}

    def build_with_faults(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        model = build(*args, **kwargs)
        real_forward = model.forward

        def patched(batch: dict) -> dict:
            if not model.training:
                return real_forward(batch)
            calls["forward"] += 1
            if calls["forward"] in forward:
                raise _oom()
            out = real_forward(batch)
            if calls["forward"] in backward:
                out["loss"].register_hook(lambda grad: (_ for _ in ()).throw(_oom()))
            return out

        model.forward = patched
        return model

    real_step = torch.optim.Adam.step

    def adam_step(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls["step"] += 1
        if calls["step"] in step:
            raise _oom()
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(setup, "build_for_training", build_with_faults)
    monkeypatch.setattr(torch.optim.Adam, "step", adam_step)


def test_out_of_memory_anywhere_skips_the_update_as_if_its_batch_never_was(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # Dropout off: a skipped forward pass must not shift the random numbers the reference run draws.
    path = make_config(tmp_path, "asr", prepared_data, model=tiny_config("asr", dropout=0.0))
    train(load_training_config(path, ["trainer.max_epochs=5"]), tmp_path / "clean")  # 5 updates, one batch each
    # 8 updates, one batch each: #2 fails in the forward pass, #4 in the backward pass, #6 in Adam's update
    # (the 4th update that reaches Adam); the other 5 are the clean run's.
    inject_oom(monkeypatch, forward={2}, backward={4}, step={4})
    train(load_training_config(path, ["trainer.max_epochs=8"]), tmp_path / "faulty")
    clean = torch.load(tmp_path / "clean" / "checkpoints" / "last.ckpt", weights_only=True)
    faulty = torch.load(tmp_path / "faulty" / "checkpoints" / "last.ckpt", weights_only=True)
    assert faulty["sate"]["faults"]["oom"] == 3 and faulty["global_step"] == 8
    for where in ("forward pass", "backward pass", "optimizer step"):
        assert f"out of memory in the {where}: update skipped" in caplog.text
    for key, value in clean["state_dict"].items():
        assert torch.allclose(value, faulty["state_dict"][key], atol=1e-6), key
    steps = [s["step"] for s in clean["optimizer_states"][0]["state"].values()]
    assert steps == [s["step"] for s in faulty["optimizer_states"][0]["state"].values()]  # Adam saw 5 updates


def test_repeated_out_of_memory_stops_naming_the_largest_batch_that_fitted(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inject_oom(monkeypatch, forward=set(range(2, 100)))
    config = load_training_config(make_config(tmp_path, "asr", prepared_data),
                                  ["trainer.max_epochs=10", "trainer.oom_patience=2"])
    from sate.data.manifest import read_manifest

    longest = max(int(row["n_frames"]) for row in read_manifest(prepared_data / "train.jsonl"))
    frames = 12 * longest  # the fixture's one batch: 12 utterances padded to the longest
    with pytest.raises(SateError, match=rf"2 updates in a row ran out of memory \(trainer.oom_patience=2\): the "
                                        rf"largest batch that fitted had {frames} frames .* at most {frames}"):
        train(config, tmp_path / "exp")
