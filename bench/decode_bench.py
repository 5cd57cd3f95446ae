"""Decoding speed alone: `python -m sate.bench --parts decode` with this script's older options.

Usage:
    python bench/decode_bench.py --model MODEL.pt --data DATA --split dev [--max-utts N] [--json OUT]
    python bench/decode_bench.py --tiny [--json OUT]

The measurement is `sate.bench.decode` (what it compares and how is described there); this wrapper keeps
the command line of the README's "Decoding speed" section and writes the decode part's figures alone.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from sate.bench import decode
from sate.bench.measure import machine
from sate.bench.subject import build_tiny, load_subject


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", type=Path, help="ST model file (sate average)")
    source.add_argument("--tiny", action="store_true", help="build and briefly train a tiny model on a synth corpus")
    parser.add_argument("--data", type=Path, help="prepared data dir of --model")
    parser.add_argument("--split", default=None, help="split to decode (default: dev; with --tiny: train)")
    parser.add_argument("--max-utts", type=int, default=None, help="decode only the first N utterances")
    parser.add_argument("--batch-sizes", default="1,4,16,64", help="comma-separated sate batch sizes")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", type=Path, default=Path("decode_bench.json"), help="where to write the figures")
    args = parser.parse_args(argv)
    if args.model is not None and args.data is None:
        parser.error("--model needs --data")
    threads = args.threads or torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        subject = build_tiny(Path(tmp)) if args.tiny else load_subject(args.model, args.data)
        torch.set_num_threads(threads)  # set here: `sate features` (in --tiny) leaves torch at 1 thread
        split = args.split or ("train" if args.tiny else "dev")
        result = decode.run(subject, split, args.max_utts, [int(x) for x in args.batch_sizes.split(",")],
                            args.beam, args.repeat)
    result["machine"] = machine()
    print(decode.table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
