"""The MuST-C scale part, the GPU check and the WMT-size text part of `python -m sate.bench` (issues 13, 14).

The GPU check cannot run here: without CUDA it must say so in one line and fail; its functions run on the
CPU with a tiny model, so that the day a GPU is lent only the device differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sate.bench import gpu
from sate.bench import scale as scale_part
from sate.bench.cli import main, parse_args, run_parts
from sate.errors import SateError


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_the_gpu_check_without_cuda_says_so_in_one_line_and_fails(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--parts", "decode,gpu", "--tiny", "--out", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("python -m sate.bench: error: --parts gpu needs a CUDA GPU"), err
    assert not (tmp_path / "b.json").exists()


@pytest.mark.slow
def test_the_gpu_check_runs_its_steps_on_the_cpu_with_a_tiny_model(tmp_path: Path) -> None:
    from sate.bench.train import espnet_counterpart
    from sate.models.tiny import tiny_config

    cpu, vocab = torch.device("cpu"), 40
    batches = gpu.fake_batches(2, 1200, vocab)
    assert len(batches) == 2 and all(b["feats"].shape[0] * b["feats"].shape[1] <= 1200 for b in batches)
    ours = gpu.paper_model("st", vocab, tiny_config("st"))
    trained = gpu.train_steps(ours, batches, cpu, warmup=1, dtype=None)  # bf16 on a CPU is slow
    assert trained["steps"] == 1 and trained["frames_per_s"] > 0 and trained["peak_gib"] is None
    espnet = gpu.train_steps(espnet_counterpart(ours, gpu.tokens(vocab), gpu.tokens(vocab)), batches, cpu,
                             espnet=True, warmup=1, dtype=None)
    assert espnet["frames_per_s"] > 0
    teachers = {"asr": tiny_config("asr"), "mt": tiny_config("mt")}
    kd = gpu.with_teachers(tiny_config("st"), tmp_path, vocab, teachers)
    assert kd.teachers and gpu.train_steps(kd, batches, cpu, warmup=1, dtype=None)["steps"] == 1
    # Short: a random model searches to the maximum length.
    items = [{"id": str(j), "feats": torch.randn(60 + 8 * j, 80), "src": torch.tensor([1, 2]),
              "tgt": torch.tensor([3, 4])} for j in range(2)]
    decoded = gpu.decode(ours, items, batch_size=5, beam=2, device=cpu)  # the batch held 2, not 5
    assert decoded["utterances"] == 2 and decoded["batch_size"] == 2
    assert decoded["sate"]["rtf"] > 0 and decoded["espnet"]["utts_per_s"] > 0
    assert gpu.estimate_hours(40_000, 8, 0.9) < gpu.estimate_hours(40_000, 1, 1.0)


@pytest.mark.slow
def test_the_scale_part_writes_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scale.json"
    assert main(["--parts", "scale", "--scale-segments", "3000", "--scale-batches", "5", "--jobs", "1",
                 "--out", str(out)]) == 0
    assert "MuST-C scale" in capsys.readouterr().out
    r = json.loads(out.read_text())["scale"]
    assert r["data"]["segments"] == 3000 and r["max_frames"] == 40000
    assert r["index"]["seconds"] >= 0 and r["sampler"]["batches"] > 5
    assert r["startup"]["seconds"] > 0 and 0 < r["startup"]["first_batch_frames"] <= 40000
    assert r["loader"]["batches"] == 5 and r["loader"]["frames_per_s"] > 0
    assert set(r["goals"]) == {"startup_s", "startup_met", "index_and_sampler_mib", "memory_met",
                               "index_and_sampler_kept_mib"}


@pytest.mark.slow
def test_the_text_part_writes_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On 4,000 pairs: every figure is there whatever the size (20,000 pairs cost 12 s more of CPU, in the
    1,000-piece vocabularies and the two stores, for the same fields)."""
    out = tmp_path / "text.json"
    assert main(["--parts", "text", "--text-lines", "4000", "--text-steps", "2", "--out", str(out)]) == 0
    assert "MT text: 4,000 pairs" in capsys.readouterr().out
    r = json.loads(out.read_text())["text"]
    assert r["text"]["lines"] == 4000 and r["train"]["store"]["pairs"] == 4000 and r["train"]["steps"] == 2
    assert r["train"]["store"]["kept"] + sum(r["train"]["store"]["dropped"].values()) == 4000
    assert 0 < r["vocab"]["peak_rss_mib"] and 0 < r["train"]["peak_rss_mib_before_training"] <= r["train"][
        "peak_rss_mib"]
    assert r["loader"]["pairs_per_s"] > 0 and r["loader_over_training"] > 0
    assert r["goal"]["peak_rss_mib"] == max(r["vocab"]["peak_rss_mib"], r["train"]["peak_rss_mib"])
    assert r["train_small"]["store"]["pairs"] == 4000  # SMALL_LINES is more than the whole corpus here
    assert r["corpus_adds_mib"] == r["train"]["peak_rss_mib"] - r["train_small"]["peak_rss_mib"]


@pytest.mark.parametrize("parts", ["gpu,scale", "scale,gpu"])
def test_the_scale_part_puts_its_loader_against_the_gpu_frames_measured_in_the_same_run(
        parts: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--parts gpu,scale` put the loader against the assumed 50,000 frames/s, "the gpu part not yet run", while
    this very run had measured it (thirtieth hostile pass); `scale,gpu` runs the gpu part first for it."""
    args = parse_args(["--parts", parts])
    assert args.parts == ["gpu", "scale"]
    monkeypatch.setattr(gpu, "run", lambda *a: {"sate": {"frames_per_s": 123_456}})
    monkeypatch.setattr(gpu, "table", lambda r: "")
    given = []
    monkeypatch.setattr(scale_part, "run", lambda *a: given.append(a) or {})
    monkeypatch.setattr(scale_part, "table", lambda r: "")
    run_parts(args, None, 1)
    assert given and given[0][-1] == 123_456
    measured, assumed = scale_part.gpu_frames(123_456), scale_part.gpu_frames(None)
    assert measured["value"] == 123_456 and "measured by the gpu part" in measured["source"]
    assert assumed["value"] == scale_part.ASSUMED_GPU_FRAMES_PER_S and assumed["source"].startswith("assumed")


def test_a_start_up_run_past_its_limit_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `sate train` start-up still short of its first step after 900 s was a TimeoutExpired traceback
    (thirtieth hostile pass)."""
    import subprocess

    def late(argv: list[str], **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    monkeypatch.setattr(scale_part.subprocess, "run", late)
    with pytest.raises(SateError, match=r"had not reached its first step after 900 s \(the goal is 60 s\)"):
        scale_part.startup(tmp_path / "data", tmp_path, 40000, 0)
