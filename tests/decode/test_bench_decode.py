"""Smoke test of bench/decode_bench.py: it runs end to end and writes every figure (no speed asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "decode_bench.py"


def test_decode_bench_writes_all_figures(tmp_path: Path, trained_st_file: Path, prepared_data: Path) -> None:
    spec = importlib.util.spec_from_file_location("decode_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    assert bench.main(["--model", str(trained_st_file), "--data", str(prepared_data), "--split", "dev",
                       "--max-utts", "3", "--batch-sizes", "1,2", "--repeat", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["utterances"] == 3 and result["beam"] == 5 and result["audio_seconds"] > 0
    espnet = result["espnet"]
    assert espnet["seconds"] > 0 and espnet["utts_per_s"] > 0 and espnet["rtf"] > 0 and espnet["peak_rss_mib"] > 0
    assert espnet["rss_rise_mib"] >= 0 and 0 <= espnet["bleu"] <= 100
    assert espnet["encode_seconds"] + espnet["search_seconds"] == pytest.approx(espnet["seconds"], abs=0.002)
    assert [row["batch_size"] for row in result["sate"]] == [1, 2]
    for row in result["sate"]:
        assert row["utts_per_s"] > 0 and row["rtf"] > 0 and row["peak_rss_mib"] > 0 and row["speedup"] > 0
        assert row["rss_rise_mib"] >= 0 and row["encode_seconds"] > 0 and row["search_speedup"] > 0
        assert row["encode_seconds"] + row["search_seconds"] == pytest.approx(row["seconds"], abs=0.002)
        assert 0 <= row["bleu"] <= 100 and 0 <= row["identical"] <= 3
