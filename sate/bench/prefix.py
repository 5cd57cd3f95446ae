"""`python -m sate.bench.prefix`: feeding a streaming decoder its committed prefix, one step per token against
one teacher-forced pass (`sate.decode.prefix.PrefixDecoder.feed`).

After every chunk a streaming policy re-runs the decoder over the prefix it has committed (its caches depend on
the memory, which has grown). The model has the demo's architecture (conf/synth/st.yaml: decoder 3 x 144, 4
heads) with random weights; the memory is random, 25 frames a second (a 4x subsampling, a frame-level adaptor),
the prefix 3 tokens a second of audio, as a translation half-way through its utterance. One torch thread, as
streaming decodes; the fastest of --repeat runs. The last column is a wait-k chunk's whole decoder work
(`continue_prefix` with limit 1: the pass, then one step).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

from sate.config import read_yaml
from sate.decode.options import DecodeOptions
from sate.decode.prefix import PrefixDecoder, continue_prefix
from sate.models import build_model
from sate.models.base import SateModel
from sate.models.decoder import token_conventions
from sate.numbers import real_number, whole_number

CONFIG = Path(__file__).resolve().parents[2] / "conf" / "synth" / "st.yaml"
FRAMES_PER_SECOND = 25
TOKENS_PER_SECOND = 3
VOCAB = 1000
MIN_SECONDS = 1 / FRAMES_PER_SECOND  # one frame of memory: 0.01 s rounded to none, a prefix timed over nothing
MAX_SECONDS = 3600.0  # an hour heard: 90,000 frames of memory, 10,800 prefix tokens


def _fastest(run: Callable[[], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def measure(model: SateModel, seconds: float, repeat: int) -> dict[str, float]:
    """Milliseconds to take a prefix of `seconds` of audio's tokens, both ways, and the tokens' count."""
    decoder = model.decoder
    memory = torch.randn(1, round(seconds * FRAMES_PER_SECOND), decoder.decoders[0].size)
    lengths = torch.tensor([memory.size(1)])
    sos = token_conventions(decoder)[0]
    prefix = [sos] + torch.randint(4, VOCAB, (round(seconds * TOKENS_PER_SECOND),)).tolist()

    def steps() -> None:
        inc = PrefixDecoder(decoder, memory, lengths, 1, len(prefix) + 1)
        for position, token in enumerate(prefix):
            inc.step(torch.tensor([token]), position)

    def one_pass() -> None:
        PrefixDecoder(decoder, memory, lengths, 1, len(prefix) + 1).feed(prefix)

    def chunk() -> None:  # what a wait-k chunk decodes: the prefix, then one token
        continue_prefix(model, memory, prefix[1:], DecodeOptions(beam=1, max_len_ratio=10.0), limit=1)

    with torch.inference_mode():
        return {"seconds": seconds, "tokens": len(prefix), "steps_ms": 1000 * _fastest(steps, repeat),
                "pass_ms": 1000 * _fastest(one_pass, repeat), "chunk_ms": 1000 * _fastest(chunk, repeat)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sate.bench.prefix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", default="1,3,10,20", help="comma-separated audio lengths heard")
    parser.add_argument("--repeat", type=whole_number, default=20, help="runs per measurement; the fastest counts")
    args = parser.parse_args(argv)
    # each length and --repeat checked before the model is built: `a` and `nan` were ValueError tracebacks, -1 torch's
    # "negative dimension", 1e9 an allocation of 14 TB, 0 a prefix heard from no memory and --repeat 0 "inf ms"
    # (26th hostile pass)
    lengths = []
    for part in args.seconds.split(","):
        try:
            seconds = real_number(part.strip())
        except argparse.ArgumentTypeError:
            seconds = math.nan
        if not (math.isfinite(seconds) and MIN_SECONDS <= seconds <= MAX_SECONDS):
            parser.error(f"--seconds must be comma-separated lengths from {MIN_SECONDS:g} (one encoder frame) to "
                         f"{MAX_SECONDS:g} seconds, got {part.strip()!r} in {args.seconds!r}")
        lengths.append(seconds)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    conf = {k: v for k, v in read_yaml(CONFIG)["model"].items() if k != "loss"}  # its teachers are not needed
    model = build_model("st", conf, VOCAB, VOCAB).eval()
    print("| audio heard | prefix (sos + tokens) | one step per token | one pass | ratio | prefix + 1 token |")
    print("|---|---|---|---|---|---|")
    for seconds in lengths:
        m = measure(model, seconds, args.repeat)
        print(f"| {seconds:g} s | {m['tokens']} | {m['steps_ms']:.1f} ms | {m['pass_ms']:.1f} ms "
              f"| {m['steps_ms'] / m['pass_ms']:.1f}x | {m['chunk_ms']:.1f} ms |")


if __name__ == "__main__":
    main()
