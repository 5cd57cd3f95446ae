"""The GPU check: `python -m sate.bench --parts gpu`, on fake data of MuST-C's shape, in under 8 minutes.

On one CUDA device, with random weights (speed does not depend on what a model has learnt):

- training steps in bf16 autocast of the paper-size SATE (the model of conf/mustc/st.yaml, 10k vocabularies as
  the MuST-C recipe): without distillation, and with its two distillation teachers (ASR and MT models of
  conf/mustc/asr.yaml and mt.yaml, frozen); and of ESPnet's ESPnetSTModel with a hier_encoder and the same
  dimensions and weights (`sate.bench.train.espnet_counterpart`). A step is forward, backward, gradient
  clipping and an Adam update on a batch of `batch.per_device` frames from our sampler over MuST-C-like
  lengths: steps/s, frames/s (real frames), peak memory (torch.cuda.max_memory_allocated);
- batched beam search (beam 5, float32) against ESPnet's BatchBeamSearch one utterance at a time on the same
  utterances: utterances/s and real-time factor; a random model rarely says eos, so both search to the
  maximum length (max_len_ratio 1.0): a pure throughput figure;
- with two or more GPUs, a DDP step on two of them (NCCL), against one GPU: the scaling efficiency;
- from the frames/s, the MuST-C recipe's wall-clock on 1 and 8 GPUs (an estimate: 50 epochs of the train set).

Without CUDA it raises `SateError` (one line, exit status 2). The functions take a device, so a test runs
them on the CPU with a tiny model.
"""

from __future__ import annotations

import contextlib
import copy
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np
import torch
import yaml

from sate.bench.data import mustc_like_durations
from sate.errors import SateError
from sate.train.schema import TrainingConfig

if TYPE_CHECKING:  # the dataset module: imported where batches are made
    from sate.data.dataset import Batch, Item

CONF = Path(__file__).resolve().parents[2] / "conf" / "mustc"
VOCAB = 10_000  # the MuST-C recipe's SentencePiece sizes
TOKENS_PER_SECOND = {"src": 4.0, "tgt": 4.5}  # an assumption: TED speech, 10k SentencePiece units
MUSTC_FRAMES = 408 * 3600 * 100  # MuST-C En-De v1 train: 408 h of 100 frames/s
EPOCHS = 50  # conf/mustc/st.yaml's max_epochs
BUDGET_S = 8 * 60


class StepSpeed(TypedDict):
    """Timed training steps (`train_steps`)."""

    steps: int
    seconds: float
    steps_per_s: float
    frames_per_s: int
    peak_gib: float | None  # CUDA only


class DdpSpeed(StepSpeed):
    scaling_efficiency: NotRequired[float]  # steps/s per rank over one GPU's


class DecodeSpeed(TypedDict):
    seconds: float
    utts_per_s: float
    rtf: float


class GpuDecode(TypedDict):
    """Our batched beam search against ESPnet's one utterance at a time (`decode`)."""

    utterances: int
    audio_s: float
    beam: int
    batch_size: int
    sate: DecodeSpeed
    espnet: DecodeSpeed
    speedup: float


# The MuST-C training time estimated from the frames/s; "from" says from which (a keyword, hence this form).
Estimate = TypedDict("Estimate", {"hours_1_gpu": float, "hours_8_gpus": float, "efficiency_8_gpus": float,
                                  "epochs": int, "from": str})


class GpuResult(TypedDict):
    """The gpu part's figures."""

    device: str
    gpus: int
    max_frames: int
    vocab: int
    parameters: int
    sate: StepSpeed
    espnet: StepSpeed
    ratio: float
    sate_with_teachers: StepSpeed
    decode: GpuDecode
    ddp: NotRequired[DdpSpeed]  # with two GPUs and time left
    estimate: Estimate
    seconds: float
    within_budget: bool


def require_cuda() -> None:
    if not torch.cuda.is_available():
        raise SateError("--parts gpu needs a CUDA GPU and torch sees none (torch.cuda.is_available() is False); "
                        "run it on a GPU machine")


def tokens(size: int) -> list[str]:
    return ["<blank>", "<unk>", *(f"t{i}" for i in range(size - 3)), "<sos/eos>"]


def paper_model(section: str = "st", vocab: int = VOCAB, conf: dict | None = None) -> Any:
    """The model section of conf/mustc/<section>.yaml (or `conf`), distillation off, random weights."""
    from sate.models import build_model  # heavy: ESPnet

    model_conf = copy.deepcopy(conf or yaml.safe_load((CONF / f"{section}.yaml").read_text())["model"])
    if section == "st":
        model_conf.setdefault("loss", {})["kd"] = {"asr_weight": 0.0, "mt_weight": 0.0}
    return build_model(section, model_conf, vocab, vocab)


def with_teachers(student_conf: dict, work: Path, vocab: int, teacher_confs: dict[str, dict]) -> Any:
    """The ST model with its ASR and MT teachers (random, saved as model files in `work`) attached."""
    from sate.models.model_file import save_model_file  # heavy: torch
    from sate.train.setup import build_for_training  # heavy: torch

    kd = {"asr_weight": 0.5, "mt_weight": 0.5}
    for side, conf in teacher_confs.items():
        path = work / f"{side}.pt"
        save_model_file(path, paper_model(side, vocab, conf), tokens(vocab), tokens(vocab))
        kd[f"{side}_teacher"] = str(path)
    conf = copy.deepcopy(student_conf)
    conf.setdefault("loss", {})["kd"] = kd
    return build_for_training(TrainingConfig(task="st", model=conf), tokens(vocab), tokens(vocab))


def fake_batches(count: int, max_frames: int, vocab: int, seed: int = 0) -> list[Batch]:
    """`count` batches of our sampler over MuST-C-like lengths, random fbank and tokens (on the CPU)."""
    from sate.data.dataset import Item, collate  # heavy: torch
    from sate.data.sampler import BucketBatchSampler  # heavy: torch

    rng = np.random.default_rng(seed)
    durations = mustc_like_durations(rng, 120 * count + 400)  # enough for `count` full batches
    lengths = np.round(durations * 100).astype(int)
    gen = torch.Generator().manual_seed(seed)

    def ids(side: str, seconds: float) -> torch.Tensor:
        return torch.randint(1, vocab - 1, (max(1, round(TOKENS_PER_SECOND[side] * seconds)),), generator=gen)

    batches = []
    for batch in list(BucketBatchSampler(lengths, max_frames=max_frames, seed=seed))[:count]:
        batches.append(collate([Item(id=f"fake_{i}", feats=torch.randn(int(lengths[i]), 80, generator=gen),
                                     src=ids("src", durations[i]), tgt=ids("tgt", durations[i])) for i in batch]))
    return batches


def _to(batch: Batch, device: torch.device) -> Batch:
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _loss(model: torch.nn.Module, batch: Batch, espnet: bool) -> torch.Tensor:
    if espnet:
        return model(speech=batch["feats"], speech_lengths=batch["feats_lengths"], text=batch["tgt"],
                     text_lengths=batch["tgt_lengths"], src_text=batch["src"], src_text_lengths=batch["src_lengths"])[0]
    return model(batch)["loss"]


def train_steps(model: torch.nn.Module, batches: list[Batch], device: torch.device, espnet: bool = False,
                warmup: int = 2, dtype: torch.dtype | None = torch.bfloat16) -> StepSpeed:
    """Time full training steps (autocast forward, backward, clipping, Adam) over `batches` after `warmup`.

    The model is left on `device`; the caller moves it back when it needs the memory. `dtype` None: no autocast."""
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=1e-4)

    def step(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext():
            loss = _loss(model, batch, espnet)
        loss.float().backward()
        torch.nn.utils.clip_grad_norm_(params, 10.0)
        optimizer.step()

    on_device = [_to(b, device) for b in batches]
    for batch in on_device[:warmup]:
        step(batch)
    _sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timed = on_device[warmup:] or on_device
    start = time.perf_counter()
    for batch in timed:
        step(batch)
    _sync(device)
    seconds = time.perf_counter() - start
    frames = sum(int(b["feats_lengths"].sum()) for b in timed)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return StepSpeed(steps=len(timed), seconds=round(seconds, 3), steps_per_s=round(len(timed) / seconds, 3),
                     frames_per_s=round(frames / seconds), peak_gib=None if peak is None else round(peak, 2))


@torch.no_grad()
def decode(model: Any, items: list[Item], batch_size: int, beam: int, device: torch.device) -> GpuDecode:
    """Our batched beam search against ESPnet's one utterance at a time (module docstring)."""
    from espnet.nets.batch_beam_search import BatchBeamSearch  # heavy: ESPnet

    from sate.data.dataset import collate  # heavy: torch
    from sate.decode.beam_search import DecodeOptions, decode_memory, encode_for_decoding  # heavy: torch

    model.to(device).eval()  # left there: the caller moves it back
    audio = sum(int(i["feats"].size(0)) for i in items) / 100
    options = DecodeOptions(beam=beam, lenpen=0.0, length_bonus=0.0, max_len_ratio=1.0)
    order = sorted(range(len(items)), key=lambda i: items[i]["feats"].size(0))
    _sync(device)
    start = time.perf_counter()
    for first in range(0, len(order), batch_size):
        batch = _to(collate([items[i] for i in order[first:first + batch_size]]), device)
        memory, lengths = encode_for_decoding(model, batch)
        decode_memory(model.decoder, memory, lengths, model.eos, options)
    _sync(device)
    ours = time.perf_counter() - start
    search = BatchBeamSearch(scorers={"decoder": model.decoder}, weights={"decoder": 1.0}, beam_size=beam,
                             vocab_size=model.decoder.output_layer.out_features, sos=model.eos, eos=model.eos)
    search.to(device).eval()
    start = time.perf_counter()
    for item in items:
        feats = item["feats"][None].to(device)
        enc = model.encode(feats, torch.tensor([feats.size(1)], device=device))
        search(x=enc.memory[0], maxlenratio=0.0, minlenratio=0.0)
    _sync(device)
    theirs = time.perf_counter() - start
    # the batch as decoded: `--gpu-utts 1000` over the 425 utterances a run's batches held said "sate batch 1000"
    return GpuDecode(utterances=len(items), audio_s=round(audio, 1), beam=beam,
                     batch_size=min(batch_size, len(items)),
                     sate=DecodeSpeed(seconds=round(ours, 2), utts_per_s=round(len(items) / ours, 2),
                                      rtf=round(ours / audio, 4)),
                     espnet=DecodeSpeed(seconds=round(theirs, 2), utts_per_s=round(len(items) / theirs, 2),
                                        rtf=round(theirs / audio, 4)),
                     speedup=round(theirs / ours, 2))


def _ddp_worker(rank: int, world: int, port: int, max_frames: int, steps: int, out: str) -> None:
    """One rank of the two-GPU DDP step (spawned): paper-size SATE, bf16, `steps` timed steps."""
    import torch.distributed as dist  # heavy: torch
    from torch.nn.parallel import DistributedDataParallel  # heavy: torch

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = DistributedDataParallel(paper_model().to(device), device_ids=[rank])
    batches = fake_batches(steps + 2, max_frames, VOCAB, seed=rank)
    figures = train_steps(model, batches, device)
    if rank == 0:
        Path(out).write_text(yaml.safe_dump(figures))
    dist.destroy_process_group()


def ddp_step(max_frames: int, steps: int) -> DdpSpeed:
    """Steps/s of DDP on two GPUs (each with its own batch of `max_frames`)."""
    import socket

    import torch.multiprocessing as mp  # heavy: torch

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "ddp.yaml")
        mp.spawn(_ddp_worker, args=(2, port, max_frames, steps, out), nprocs=2, join=True)
        return yaml.safe_load(Path(out).read_text())


def estimate_hours(frames_per_s: float, gpus: int, efficiency: float) -> float:
    """Wall-clock of the MuST-C recipe's SATE training (EPOCHS epochs), from one GPU's frames/s."""
    return round(EPOCHS * MUSTC_FRAMES / (frames_per_s * gpus * efficiency) / 3600, 1)


def run(steps: int = 10, decode_utts: int = 32, beam: int = 5, max_frames: int | None = None) -> GpuResult:
    """Every figure of the module docstring, on the first CUDA device; raises `SateError` without one."""
    from sate.bench.train import espnet_counterpart  # heavy: torch
    from sate.data.dataset import Item  # heavy: torch

    require_cuda()
    started = time.perf_counter()
    device = torch.device("cuda", 0)
    st = yaml.safe_load((CONF / "st.yaml").read_text())
    max_frames = max_frames or int(st["batch"]["per_device"])
    torch.manual_seed(0)
    batches = fake_batches(steps + 2, max_frames, VOCAB)
    ours = paper_model()
    parameters = sum(p.numel() for p in ours.parameters())
    sate = train_steps(ours, batches, device)
    espnet = espnet_counterpart(ours.cpu(), tokens(VOCAB), tokens(VOCAB))
    theirs = train_steps(espnet, batches, device, espnet=True)
    espnet.cpu()
    del espnet
    torch.cuda.empty_cache()
    with tempfile.TemporaryDirectory() as tmp:
        teachers = {side: yaml.safe_load((CONF / f"{side}.yaml").read_text())["model"] for side in ("asr", "mt")}
        kd_model = with_teachers(st["model"], Path(tmp), VOCAB, teachers)
        with_kd = train_steps(kd_model, batches, device)
        kd_model.cpu()
        del kd_model
        torch.cuda.empty_cache()
    items = [Item(id=f"u{i}", feats=b["feats"][j, :int(b["feats_lengths"][j])], src=b["src"][j], tgt=b["tgt"][j])
             for i, b in enumerate(batches) for j in range(len(b["ids"]))]
    short = sorted(items, key=lambda x: x["feats"].size(0))[: decode_utts * 2][::2]  # among the shorter ones
    decoded = decode(ours, short, batch_size=decode_utts, beam=beam, device=device)
    efficiency = 0.9
    ddp: dict[str, DdpSpeed] = {}  # "ddp" where it ran
    if torch.cuda.device_count() >= 2 and time.perf_counter() - started < BUDGET_S - 120:
        ddp["ddp"] = ddp_step(max_frames, steps)
        efficiency = round(ddp["ddp"]["steps_per_s"] / sate["steps_per_s"], 3)
        ddp["ddp"]["scaling_efficiency"] = efficiency
    frames = with_kd["frames_per_s"]
    estimate = Estimate({"hours_1_gpu": estimate_hours(frames, 1, 1.0),
                         "hours_8_gpus": estimate_hours(frames, 8, efficiency), "efficiency_8_gpus": efficiency,
                         "epochs": EPOCHS,
                         "from": "sate_with_teachers frames/s; 8 GPUs at the measured 2-GPU efficiency (else 0.9)"})
    seconds = round(time.perf_counter() - started, 1)
    return GpuResult(device=torch.cuda.get_device_name(device), gpus=torch.cuda.device_count(),
                     max_frames=max_frames, vocab=VOCAB, parameters=parameters, sate=sate, espnet=theirs,
                     ratio=round(sate["frames_per_s"] / theirs["frames_per_s"], 3), sate_with_teachers=with_kd,
                     decode=decoded, **ddp, estimate=estimate, seconds=seconds, within_budget=seconds <= BUDGET_S)


def table(result: GpuResult) -> str:
    lines = [f"GPU check on {result['device']} ({result['gpus']} GPU(s)): batches of {result['max_frames']} frames, "
             f"bf16 autocast, {result['parameters']:,} parameters, {result['seconds']} s in all",
             "model                          steps/s   frames/s  peak GiB"]
    for key, label in (("espnet", "espnet ESPnetSTModel+hier"), ("sate", "sate SATE"),
                       ("sate_with_teachers", "sate SATE + 2 KD teachers")):
        f = result[key]
        lines.append(f"{label:<30s} {f['steps_per_s']:7.2f} {f['frames_per_s']:10,d} {f['peak_gib']:9.2f}")
    lines.append(f"ratio sate / espnet frames/s: {result['ratio']}")
    d = result["decode"]
    lines.append(f"decoding {d['utterances']} utterances ({d['audio_s']} s), beam {d['beam']}: sate batch "
                 f"{d['batch_size']} {d['sate']['utts_per_s']} utt/s (RTF {d['sate']['rtf']}), espnet one by one "
                 f"{d['espnet']['utts_per_s']} utt/s (RTF {d['espnet']['rtf']}): {d['speedup']}x")
    if "ddp" in result:
        lines.append(f"DDP on 2 GPUs: {result['ddp']['steps_per_s']} steps/s per rank, scaling efficiency "
                     f"{result['ddp']['scaling_efficiency']}")
    e = result["estimate"]
    lines.append(f"MuST-C SATE ({e['epochs']} epochs) estimated: {e['hours_1_gpu']} h on 1 GPU, {e['hours_8_gpus']} h "
                 f"on 8 (efficiency {e['efficiency_8_gpus']})")
    return "\n".join(lines)
