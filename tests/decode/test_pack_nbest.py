"""`sate pack --decode nbest=N`: stored in sate.yaml, it had every `translate --model PACK` compute N hypotheses and
print the best alone, as `translate --decode nbest=N` did before it was refused (24th hostile pass, review)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sate.cli import main
from tests.decode.test_pack_api import tiny_model_file


def test_pack_refuses_an_nbest_its_translations_would_drop(tmp_path: Path, prepared_data: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_model_file(tmp_path, prepared_data, "st")
    out = tmp_path / "pack"
    assert main(["pack", "--model", str(model), "--data", str(prepared_data), "--out", str(out),
                 "--decode", "beam=4,nbest=03"]) == 2
    assert capsys.readouterr().err.strip() == (  # in translate's words, the value as written (review24f)
        "sate pack: error: --decode nbest=03: sate translate and sate evaluate, which decode with a pack's options, "
        "write the best hypothesis alone; nbest does not apply (the Python API's beam_search returns n-best lists)")
    assert not out.exists()
    for decode in ("beam=4,nbest=1", "beam=4"):  # one hypothesis: packed as before
        assert main(["pack", "--model", str(model), "--data", str(prepared_data), "--out", str(out),
                     "--decode", decode]) == 0
        assert yaml.safe_load((out / "sate.yaml").read_text())["decode"]["nbest"] == 1
