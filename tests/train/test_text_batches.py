"""`sate train` of SATE with MT text batches (model.loss.mt_text_weight): the batches reach the model, the MT loss is
logged, data.mt_text feeds them, a resumed run ends as an uninterrupted one, and the config keys are checked."""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.cli import main
from sate.data.manifest import read_manifest
from sate.errors import SateError
from sate.models.tiny import tiny_config
from sate.train.trainer import load_training_config, train

MakeConfig = Callable[..., Path]
# Five speech batches an epoch, a text batch of a few pairs beside each.
SMALL = ["batch.per_device=800", "batch.global=800", "batch.mt_tokens=60", "trainer.max_epochs=100"]


def _rows(exp: Path, key: str) -> list[float]:
    return [float(row[key]) for path in sorted((exp / "logs").glob("version_*/metrics.csv"))
            for row in csv.DictReader(path.open()) if row.get(key)]


def _config(make_config: MakeConfig, tmp_path: Path, data: Path, weight: float = 1.0) -> Path:
    return make_config(tmp_path, "st", data, model=tiny_config("st", adaptor=None) | {
        "loss": {"mt_text_weight": weight}})


@pytest.mark.slow
def test_text_batches_are_trained_on_logged_and_resume_exactly(tmp_path: Path, make_config: MakeConfig,
                                                               prepared_data: Path) -> None:
    path = _config(make_config, tmp_path, prepared_data)
    seen: list[dict] = []
    from lightning.pytorch.callbacks import Callback

    class Batches(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:  # noqa: ANN001
            seen.append(batch)

    whole = tmp_path / "whole"
    train(load_training_config(path, [*SMALL, "trainer.max_steps=7"]), whole, callbacks=[Batches()])
    assert len(seen) == 7 and all(len(b["mt"]["ids"]) > 0 and "feats" not in b["mt"] for b in seen)
    assert len(_rows(whole, "train/loss_mt")) == 7 and all(v > 0 for v in _rows(whole, "train/loss_mt"))
    assert _rows(whole, "valid/loss") and not _rows(whole, "valid/loss_mt")  # validation is speech only

    resumed = tmp_path / "resumed"
    # Stopped at update 3 of the first epoch, then resumed into the second epoch.
    train(load_training_config(path, [*SMALL, "trainer.max_steps=3", "trainer.checkpoint_every_steps=3"]), resumed)
    train(load_training_config(path, [*SMALL, "trainer.max_steps=7", "trainer.checkpoint_every_steps=3"]), resumed)
    a = torch.load(whole / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "checkpoints" / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 7 and a["epoch"] == 1
    for key, value in a["state_dict"].items():
        assert torch.allclose(value, b["state_dict"][key], atol=1e-6), key
    assert _rows(resumed, "train/loss_mt") == pytest.approx(_rows(whole, "train/loss_mt"), rel=1e-5)


@pytest.mark.slow
def test_mt_text_files_feed_the_text_batches(tmp_path: Path, make_config: MakeConfig, prepared_data: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    rows = read_manifest(prepared_data / "train.jsonl")
    en, de = tmp_path / "a.en", tmp_path / "a.de"
    en.write_text("".join(r["src"] + "\n" for r in rows[:5]), encoding="utf-8")
    de.write_text("".join(r["tgt"] + "\n" for r in rows[:5]), encoding="utf-8")
    ids: list[str] = []
    from lightning.pytorch.callbacks import Callback

    class TextIds(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:  # noqa: ANN001
            ids.extend(batch["mt"]["ids"])

    # a copy: the MT text store goes to DATA/mt_bin, and in the shared fixture it was the next test's second store
    data = shutil.copytree(prepared_data, tmp_path / "data")
    config = load_training_config(_config(make_config, tmp_path, data),
                                  [*SMALL, f"data.mt_text=[[{en}, {de}]]", "trainer.max_steps=3"])
    train(config, tmp_path / "exp", callbacks=[TextIds()])
    assert "5 pairs read, 5 kept" in capsys.readouterr().out
    assert ids and {i.rsplit("_", 1)[0] for i in ids} == {"a"}  # <file stem>_<line>: the file's pairs


@pytest.mark.parametrize(("settings", "message"), [
    (["batch.mt_tokens=3"], r"batch.mt_tokens \(3 tokens\) is smaller than the longest item"),
])
def test_a_text_batch_cap_below_the_longest_pair_is_one_line(tmp_path: Path, make_config: MakeConfig,
                                                             prepared_data: Path, settings: list[str],
                                                             message: str) -> None:
    config = load_training_config(_config(make_config, tmp_path, prepared_data), [*settings, "trainer.max_steps=1"])
    with pytest.raises(SateError, match=message):
        train(config, tmp_path / "exp")


@pytest.mark.parametrize(("weight", "settings", "message"), [
    (0.0, ["data.mt_text=[[a.en, a.de]]"], "data.mt_text is set but model.loss.mt_text_weight is 0"),
    (0.0, ["batch.mt_tokens=500"], "batch.mt_tokens is set but does nothing"),
    (1.0, ["data.mt_text=[[missing.en, missing.de]]"], "data.mt_text: missing.en: file is missing"),
])
def test_the_text_keys_are_checked_before_training(tmp_path: Path, make_config: MakeConfig, prepared_data: Path,
                                                   weight: float, settings: list[str], message: str) -> None:
    with pytest.raises(SateError, match=message):
        config = load_training_config(_config(make_config, tmp_path, prepared_data, weight), settings)
        train(config, tmp_path / "exp")


@pytest.mark.parametrize("bad", [".nan", "-1", "yes", "'1'"])
def test_a_bad_weight_is_named_itself_not_the_text_keys_beside_it(tmp_path: Path, make_config: MakeConfig,
                                                                  prepared_data: Path, bad: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """With batch.mt_tokens or data.mt_text set, a weight of NaN, -1 or yes was read as 0 and the error blamed
    batch.mt_tokens ("is set but does nothing"), sending the user to delete the key that was right."""
    config = _config(make_config, tmp_path, prepared_data)
    assert main(["config", "--config", str(config), "--set", f"model.loss.mt_text_weight={bad}",
                 "--set", "batch.mt_tokens=500", "--set", "data.mt_text=[[a.en, a.de]]"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "loss.mt_text_weight must be" in err, err


def test_a_directory_as_mt_text_is_named_for_what_it_is(tmp_path: Path, make_config: MakeConfig,
                                                        prepared_data: Path) -> None:
    """A folder given as a text file was called missing, though it was there."""
    (tmp_path / "corpus").mkdir()
    config = load_training_config(_config(make_config, tmp_path, prepared_data),
                                  [f"data.mt_text=[[{tmp_path / 'corpus'}, {tmp_path / 'corpus'}]]"])
    with pytest.raises(SateError, match=r"data.mt_text: .*corpus: a directory, not a text file"):
        train(config, tmp_path / "exp")


def test_a_named_pipe_as_mt_text_is_refused_before_the_model_is_built(tmp_path: Path, make_config: MakeConfig,
                                                                     prepared_data: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO given as data.mt_text was named only once the model was built (seventeenth hostile pass): minutes, for
    a large model, before a one-line refusal."""
    import os

    import sate.train.setup

    fifo = tmp_path / "text.fifo"
    os.mkfifo(fifo)

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was built before data.mt_text was checked")

    monkeypatch.setattr(sate.train.setup, "build_for_training", no_model)
    config = load_training_config(_config(make_config, tmp_path, prepared_data), [f"data.mt_text=[[{fifo}, {fifo}]]"])
    with pytest.raises(SateError, match=r"data.mt_text: .*text.fifo: a named pipe"):
        train(config, tmp_path / "exp")


def test_mt_text_given_target_first_is_refused(tmp_path: Path) -> None:
    """data.mt_text [[train.de, train.en]] trained the MT source on German, exit 0 (twenty-second hostile pass):
    refused by the names, by `sate train` before any work (`check_mt_text`; `sate vocab --mt-text` tells by the words
    too: tests/data/test_vocab.py)."""
    from sate.train.datamodule import check_mt_text  # what train calls before the model is built

    english, german = tmp_path / "train.en", tmp_path / "train.de"
    english.write_text("a sentence\n", encoding="utf-8")
    german.write_text("ein Satz\n", encoding="utf-8")
    with pytest.raises(SateError, match=rf"^data.mt_text \[{german}, {english}\]: the English side goes first \(by "
                                        rf"their names: .de, then .en\); give data.mt_text \[\[{english}, {german}\], "
                                        r"...\]$"):
        check_mt_text([[str(german), str(english)]])
    assert check_mt_text([[str(english), str(german)]]) == [(english, german)]


@pytest.mark.slow
def test_an_mt_text_store_it_may_not_enter_is_refused_before_the_experiment_is_touched(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path) -> None:
    """`sate train` again over an experiment of data.mt_text whose store in DATA/mt_bin the user may not enter (mode
    0000): refused inside fit, after config.yaml and train_time.json were rewritten (twenty-third hostile pass, the
    folders harness's wider run). Now refused before, naming the store, the experiment as it was."""
    from tests.test_os_errors import as_a_user  # a child that file modes bind: the tests run as root

    rows = read_manifest(prepared_data / "train.jsonl")
    en, de = tmp_path / "a.en", tmp_path / "a.de"
    en.write_text("".join(r["src"] + "\n" for r in rows[:5]), encoding="utf-8")
    de.write_text("".join(r["tgt"] + "\n" for r in rows[:5]), encoding="utf-8")
    data = shutil.copytree(prepared_data, tmp_path / "data")
    config = _config(make_config, tmp_path, data)
    argv = ["train", "--config", str(config), "--exp", str(tmp_path / "exp"), "--set", f"data.mt_text=[[{en}, {de}]]",
            *(f"--set={s}" for s in [*SMALL[:3], "trainer.max_steps=1"])]
    assert main(argv) == 0
    exp = tmp_path / "exp"
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in exp.rglob("*") if p.is_file()}
    (store,) = (data / "mt_bin").iterdir()
    store.chmod(0)
    try:
        status, err = as_a_user([*argv, "--set=trainer.max_steps=2", "--set=trainer.max_epochs=2"])  # to train on
    finally:
        store.chmod(0o755)
    assert status == 2, err
    assert err.splitlines()[-1] == (f"sate train: error: {store} cannot be entered (no permission), where `sate train` "
                                    "keeps the MT text store of data.mt_text; lift that (chmod u+rwx), or delete it to "
                                    "have it built again")
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in exp.rglob("*") if p.is_file()} == before


def test_mt_text_in_another_target_language_is_refused_by_train(tmp_path: Path, make_config: MakeConfig,
                                                                prepared_data: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`sate train` of an MT config with data.mt_text [[news.en, news.fr]] over an En-De data directory trained the
    MT objective on French, exit 0, where `sate vocab --mt-text news.en news.fr` is refused (24th hostile pass,
    review): refused as vocab refuses it, before the model is built; the same text named .de, or by no language,
    goes on to the build."""
    import sate.train.setup

    class Built(Exception):
        """The model was about to be built: the MT text was taken."""

    def no_model(*args: object, **kwargs: object) -> None:
        raise Built

    monkeypatch.setattr(sate.train.setup, "build_for_training", no_model)
    english, french = tmp_path / "news.en", tmp_path / "news.fr"
    english.write_text("the cat sits on the mat\nwhere is the station\n" * 20, encoding="utf-8")
    french.write_text(("le chat est assis sur le tapis depuis ce matin\nou est la gare centrale de cette ville\n"
                       "nous voulons acheter du pain frais pour notre petit voyage\n") * 10, encoding="utf-8")
    config = make_config(tmp_path, "mt", prepared_data, model=tiny_config("mt"))
    argv = ["train", "--config", str(config), "--exp", str(tmp_path / "exp"), "--set", f"data.mt_text=[[{english}, "
            f"{french}]]"]
    assert main(argv) == 2
    assert re.search(
        rf"error: data.mt_text {re.escape(str(english))} {re.escape(str(french))}: news.fr is named as .fr text, and "
        r"the data directory's train split "
        r"is en-de \(by its audio's folder /\S+/en-de\), and few of its words are in the train split's translations: "
        r"give MT text whose target side is de$", capsys.readouterr().err.strip())
    for name in ("news.de", "news.txt"):
        shutil.copy(french, tmp_path / name)
        with pytest.raises(Built):
            main([*argv[:-1], f"data.mt_text=[[{english}, {tmp_path / name}]]"])
