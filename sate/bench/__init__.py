"""Benchmarks against ESPnet, one harness: `python -m sate.bench` (`sate.bench.cli`).

One module per part (decode, train, data, length); `subject` is the model and data they share, `measure`
how time and peak memory are taken.
"""
