"""Where a command may write (`sate.targets`): never over what it did not make, never in a checkpoint folder or a
pack, symlinks resolved first, refused before any work."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.cli import main
from sate.data.vocab import Vocabulary
from sate.decode.pack import pack
from sate.errors import SateError
from sate.files import atomic_write_text
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config
from sate.targets import (
    Kind,
    check_named_kind,
    check_not_linked_out,
    check_output,
    check_own_files,
    check_same_experiment,
    dir_name,
)


def model_file(path: Path, data: Path) -> Path:
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    torch.manual_seed(0)
    save_model_file(path, build_model("mt", tiny_config("mt", 16), len(src), len(tgt)), src.tokens, tgt.tokens)
    return path


def experiment(root: Path) -> Path:
    """What `sate train` leaves, as far as the rule looks: config.yaml and checkpoints/ with last.ckpt."""
    (root / "checkpoints").mkdir(parents=True)
    (root / "config.yaml").write_text("task: mt\n")
    torch.save({"sate": {"epoch": 0}, "state_dict": {}}, root / "checkpoints" / "epoch000.ckpt")
    torch.save({"sate": {"epoch": 0}, "state_dict": {}}, root / "checkpoints" / "last.ckpt")
    return root


@pytest.fixture(scope="module")
def a_pack(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path) -> Path:
    root = tmp_path_factory.mktemp("targets")
    out = root / "pack"
    pack(model_file(root / "mt.pt", prepared_data), prepared_data, out)
    return out


def test_text_never_replaces_a_model_audio_or_binary_file(tmp_path: Path) -> None:
    torch.save({"w": torch.zeros(2)}, tmp_path / "model.pt")
    sf.write(tmp_path / "talk.wav", np.zeros(1600, dtype=np.float32), 16000)
    (tmp_path / "data.bin").write_bytes(b"abc\0def")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 ".encode("latin-1") * 10)
    for name, what in [("model.pt", "zip archive"), ("talk.wav", "WAV"), ("data.bin", "binary"),
                       ("latin1.txt", "not UTF-8")]:
        with pytest.raises(SateError, match=f"--out .*{name}: refusing to replace it: it holds .*{what}"):
            check_output(tmp_path / name, "text")
    (tmp_path / "old.txt").write_text("an earlier translation\n")
    assert check_output(tmp_path / "old.txt", "text") == tmp_path / "old.txt"
    assert check_output(tmp_path / "new" / "deeper.txt", "text") == tmp_path / "new" / "deeper.txt"
    with pytest.raises(SateError, match="is a directory"):
        check_output(tmp_path / "new" / "..", "text")


def test_text_never_replaces_the_files_sate_keeps(tmp_path: Path, prepared_data: Path) -> None:
    for name, whose in [("tokens_src.txt", "sate vocab's tokens_src.txt"), ("cmvn.json", "sate features's cmvn.json"),
                        ("vocab.json", "sate vocab's"), ("dev.jsonl", "a manifest of the data directory")]:
        with pytest.raises(SateError, match=f"refusing to replace it: it is {whose}"):
            check_output(prepared_data / name, "text")
    (tmp_path / "config.yaml").write_text("task: mt\n")
    with pytest.raises(SateError, match="it is sate train's config.yaml"):
        check_output(tmp_path / "config.yaml", "text")
    (tmp_path / "talk.jsonl").write_text("{}\n")  # segments of an earlier `sate segment`, not in a data directory
    assert check_output(tmp_path / "talk.jsonl", "text") == tmp_path / "talk.jsonl"
    with pytest.raises(SateError, match=r"is read as the manifest of a split \(new-split\)"):  # 17th pass: was allowed
        check_output(prepared_data / "new-split.jsonl", "text")
    # `sate vocab --marian`'s CTC token list (twelfth hostile pass: translate --out replaced it, exit 0)
    data = tmp_path / "data"
    (data / "marian").mkdir(parents=True)
    (data / "vocab.json").write_text('{"kind": "marian"}\n')
    (data / "marian" / "ctc_tokens.txt").write_text("<blank>\n<unk>\n▁a\n")
    with pytest.raises(SateError, match=r"it is sate vocab's marian/ctc_tokens.txt"):
        check_output(data / "marian" / "ctc_tokens.txt", "text")
    (data / "delays.jsonl").write_text((prepared_data / "dev.jsonl").read_text())  # a split named as evaluate's
    with pytest.raises(SateError, match="it is a manifest of the data directory"):  # file, in no evaluate folder
        check_output(data / "delays.jsonl", "results")
    (tmp_path / "marian").mkdir()  # a folder of that name in no data directory
    (tmp_path / "marian" / "ctc_tokens.txt").write_text("notes\n")
    assert check_output(tmp_path / "marian" / "ctc_tokens.txt", "text") == tmp_path / "marian" / "ctc_tokens.txt"


def test_a_manifest_of_a_data_directory_sate_prep_alone_wrote_is_kept(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before `sate features` and `sate vocab`, a data directory holds only manifests: `segment train.wav --out
    DATA` replaced DATA/train.jsonl with segment times, exit 0 (tenth hostile pass)."""
    data = tmp_path / "data"
    data.mkdir()
    row = {"id": "ted_1_0", "audio": "/corpus/ted_1.wav", "offset": 0.0, "duration": 1.0, "src": "hello"}
    (data / "train.jsonl").write_text(json.dumps(row) + "\n")
    before = (data / "train.jsonl").read_text()
    talk = tmp_path / "train.wav"
    tone = 0.3 * np.sin(np.arange(48000) * 0.05).astype(np.float32)
    sf.write(talk, np.concatenate([tone, np.zeros(16000, np.float32), tone]), 16000)
    assert main(["segment", str(talk), "--vad", "energy", "--out", str(data)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate segment: error: --out {data}: refusing to write into it: it is "
                                               "a data directory, which only `sate prep`, `features` and `vocab` "
                                               "write; give a new or other directory")  # the folder (pass 18)
    assert (data / "train.jsonl").read_text() == before
    with pytest.raises(SateError, match="it is a manifest of the data directory"):
        check_output(data / "train.jsonl", "text")
    (data / "talk.jsonl").write_text('{"file": "talk.wav", "segment": 0, "start": 0.1, "end": 2.9}\n')
    with pytest.raises(SateError, match=r"is read as the manifest of a split \(talk\)"):  # seventeenth pass
        check_output(data / "talk.jsonl", "text")  # an earlier `sate segment`'s, which `sate features` stopped at


def test_a_directory_given_for_a_file_gets_no_other_commands_advice(tmp_path: Path) -> None:
    """`sate report --out DIR` (and bench's) was told that `translate --format srt` and `segment` write one file per
    input into a directory (hand27o, twenty-seventh pass): that hint is translate's own now."""
    with pytest.raises(SateError) as caught:
        check_output(tmp_path, "text")
    assert str(caught.value) == f"--out {tmp_path}: is a directory (give a file name)"


def test_symlinks_are_resolved_before_deciding(tmp_path: Path) -> None:
    torch.save({"w": torch.zeros(2)}, tmp_path / "model.pt")
    (tmp_path / "link.txt").symlink_to(tmp_path / "model.pt")
    with pytest.raises(SateError, match="zip archive"):
        check_output(tmp_path / "link.txt", "text")
    (tmp_path / "notes.txt").write_text("old\n")
    (tmp_path / "notes-link.txt").symlink_to("notes.txt")
    assert check_output(tmp_path / "notes-link.txt", "text") == tmp_path / "notes.txt"
    atomic_write_text(tmp_path / "notes-link.txt", "new\n")  # the link stays, the file it names is replaced
    assert (tmp_path / "notes-link.txt").is_symlink() and (tmp_path / "notes.txt").read_text() == "new\n"


def test_a_symlink_loop_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`segment --out LOOP` was a RuntimeError traceback ("Symlink loop from ...") from Path.resolve; a chain of
    links that ends where it began is a loop too."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    for link in ("loop", "a"):
        assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / link)]) == 2
        assert capsys.readouterr().err.startswith(f"sate segment: error: --out {tmp_path / link}: a symlink loop")
        with pytest.raises(SateError, match="a symlink loop"):
            check_output(tmp_path / link, "model")
    assert (tmp_path / "loop").is_symlink() and (tmp_path / "a").is_symlink()


def test_a_symlink_loop_on_the_way_to_an_output_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An output inside a folder that is a symlink loop (`--out LOOP/seg.jsonl`, `fetch-whisper --cache LOOP`, whose
    whisper-tiny.en goes inside) passed the checks: after the work (segmenting, packing, a download) the folder's
    mkdir said "LOOP: File exists", naming no option (sixteenth hostile pass, the arguments harness's wider run)."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    out = tmp_path / "loop" / "deeper" / "seg.jsonl"
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"sate segment: error: --out {out}: a symlink loop ({tmp_path / 'loop'} leads " \
                                      "back to itself)\n"
    for kind in ("model", "directory", "text"):
        with pytest.raises(SateError, match=f"--cache {tmp_path / 'loop'}/x: a symlink loop"):
            check_output(tmp_path / "loop" / "x", kind, "--cache")  # type: ignore[arg-type]


def test_nothing_is_written_in_a_checkpoint_folder_or_a_pack(tmp_path: Path, a_pack: Path) -> None:
    exp = experiment(tmp_path / "exp")
    for kind, path in [("model", exp / "checkpoints" / "epoch000.ckpt"), ("model", exp / "checkpoints" / "new.pt"),
                       ("text", exp / "checkpoints" / "sub" / "hyp.txt"), ("directory", exp / "checkpoints"),
                       ("directory", exp / "checkpoints" / "eval")]:
        with pytest.raises(SateError, match="is a checkpoint folder, which only `sate train` writes"):
            check_output(path, kind)
    assert check_output(exp / "model.pt", "model") == exp / "model.pt"  # beside the checkpoints is fine
    with pytest.raises(SateError) as caught:  # `sate train --exp EXP/checkpoints`: its experiment named (21st pass)
        check_output(exp / "checkpoints", "experiment", "--exp")
    assert str(caught.value) == (f"--exp {exp / 'checkpoints'}: {exp / 'checkpoints'} is a checkpoint folder, which "
                                 f"only `sate train` writes (into the experiment that holds it, {exp})")
    for kind, path in [("text", a_pack / "model.pt"), ("text", a_pack / "notes.txt"), ("directory", a_pack),
                       ("model", a_pack / "model.pt"), ("pack", a_pack / "inner")]:
        with pytest.raises(SateError, match="is a packed model, which only `sate pack` writes"):
            check_output(path, kind)
    assert check_output(a_pack, "pack") == a_pack  # a pack replaces a pack


def test_each_kind_replaces_only_its_own_kind(tmp_path: Path, prepared_data: Path) -> None:
    model = model_file(tmp_path / "model.pt", prepared_data)
    assert check_output(model, "model") == model
    (tmp_path / "text.txt").write_text("hello\n")
    torch.save({"sate": {}, "state_dict": {}}, tmp_path / "epoch.ckpt")
    for name in ("text.txt", "epoch.ckpt"):
        with pytest.raises(SateError, match="it is not a sate model file"):
            check_output(tmp_path / name, "model")
    with pytest.raises(SateError, match="is a directory"):
        check_output(tmp_path, "model")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("mine\n")
    with pytest.raises(SateError, match=r"not a packed model \(sate.yaml is missing\)"):
        check_output(tmp_path / "full", "pack")
    with pytest.raises(SateError, match="text.txt: not a directory"):
        check_output(tmp_path / "text.txt", "pack")
    with pytest.raises(SateError, match="text.txt: not a directory"):
        check_output(tmp_path / "text.txt", "directory")
    with pytest.raises(SateError, match="not a PNG image"):
        check_output(tmp_path / "text.txt", "image")
    with pytest.raises(SateError, match="root directory"):
        check_output(Path("/"), "pack")
    with pytest.raises(SateError, match=r"the name is longer than the file system allows \(300 bytes"):
        check_output(tmp_path / ("x" * 300), "text")
    with pytest.raises(SateError, match=r"cannot write \(.*text.txt is not a directory\)"):
        check_output(tmp_path / "text.txt" / "inside.txt", "text")


def test_translate_out_into_its_own_pack_is_refused_before_any_work(tmp_path: Path, a_pack: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    sf.write(tmp_path / "talk.wav", np.zeros(16000, dtype=np.float32), 16000)
    before = (a_pack / "model.pt").read_bytes()
    assert main(["translate", "--model", str(a_pack), str(tmp_path / "talk.wav"),
                 "--out", str(a_pack / "model.pt")]) == 2
    assert "is a packed model, which only `sate pack` writes" in capsys.readouterr().err
    assert (a_pack / "model.pt").read_bytes() == before
    assert main(["segment", str(tmp_path / "talk.wav"), "--out", str(a_pack / "talk.jsonl")]) == 2
    assert "is a packed model" in capsys.readouterr().err
    assert not (a_pack / "talk.jsonl").exists()


def test_average_refuses_checkpoints_directories_and_other_files(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    exp = experiment(tmp_path / "exp")
    ckpts = {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()}
    (tmp_path / "notes.txt").write_text("mine\n")
    for out, why in [(exp / "checkpoints" / "epoch000.ckpt", "checkpoint folder"),
                     (exp / "checkpoints" / "last.ckpt", "checkpoint folder"),
                     (tmp_path, "is a directory"), (tmp_path / "notes.txt", "not a sate model file")]:
        assert main(["average", "--exp", str(exp), "--last", "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert why in err and len(err.splitlines()) == 1, err
    assert {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()} == ckpts
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_model_output_is_not_written_into_another_experiment(tmp_path: Path, a_pack: Path, prepared_data: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`sate average --exp exp/st --out exp/asr/model.pt` (an --out copied from the ASR line) replaced the ASR model
    with the ST average, exit 0; `sate pack` of exp/st's model into exp/asr/pack replaced the ASR pack, and an
    evaluation of exp/st/pack went into exp/asr (twenty-second hostile pass): each then passed for the ASR
    experiment's own (`--init-from asr=exp/asr/model.pt`, `sate report`). Refused before any work, naming both
    experiments; an output in the source's own experiment, or outside any, is let through."""
    st, asr = experiment(tmp_path / "exp" / "st"), experiment(tmp_path / "exp" / "asr")
    (asr / "model.pt").write_bytes(b"the ASR model")
    (st / "model.pt").write_bytes(b"the ST model")
    shutil.copytree(a_pack, asr / "pack")
    shutil.copytree(a_pack, st / "pack")
    (tmp_path / "elsewhere").symlink_to(asr)  # links resolved: the experiment a link leads into
    before = sorted(str(p) for p in asr.rglob("*"))
    for argv, out in [(["average", "--exp", str(st), "--last", "1", "--out"], asr / "model.pt"),
                      (["average", "--exp", str(st), "--last", "1", "--out"], tmp_path / "elsewhere" / "st.pt"),
                      (["pack", "--model", str(st / "model.pt"), "--data", str(prepared_data), "--out"], asr / "pack"),
                      (["evaluate", "--model", str(st / "pack"), "--data", str(prepared_data), "--split", "dev",
                        "--out"], asr / "decode_dev")]:
        assert main([*argv, str(out)]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"--out {out}: it lies in the experiment {asr}, and " in err, err
        assert f"is of the experiment {st}: it would be taken for asr's own; write it in {st} or outside any " \
               "experiment" in err, err
    assert sorted(str(p) for p in asr.rglob("*")) == before and (asr / "model.pt").read_bytes() == b"the ASR model"
    # a cascade's evaluation is both experiments'; a model from outside any experiment says nothing of its home
    check_same_experiment(asr / "decode_cascade", [asr / "pack", tmp_path / "exp" / "mt" / "pack"], "--model")
    check_same_experiment(asr / "model2.pt", [tmp_path / "avg.pt"], "--model")
    check_same_experiment(st / "model2.pt", [st], "the average")
    # a checkpoints/ folder alone (a project's root, a cluster's /checkpoints) makes no experiment of the folders
    # above: the README's `sate pack --out packs/st` was refused as "in the experiment" of the project's root
    (tmp_path / "checkpoints").mkdir()
    check_same_experiment(tmp_path / "packs" / "st", [st / "model.pt"], "--model")
    check_same_experiment(tmp_path / "exp" / "cascade" / "decode_dev", [st / "pack", asr / "pack"], "--model")


def test_an_output_named_in_another_experiment_is_refused_wherever_it_leads(
        tmp_path: Path, a_pack: Path, prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both places of an output count: the experiment it is named in and the one it leads into. Judging only where
    it leads (27th hostile pass, first mend) let `sate average --exp exp/st --out exp/asr/model.pt`, `sate pack`
    into exp/asr/pack and `sate evaluate --out exp/asr/decode_dev` through where those are links to a store outside
    any experiment (a model kept on a bigger disk): the store's file became the ST one, and `sate report`,
    `--init-from` and the cascade read it as exp/asr's, exit 0. Refused as before the mend; links that keep to one
    experiment, or lead out of the source's own, are let through."""
    st, asr = experiment(tmp_path / "exp" / "st"), experiment(tmp_path / "exp" / "asr")
    store = tmp_path / "store"
    store.mkdir()
    shutil.copyfile(a_pack / "model.pt", store / "asr.pt")  # a model file: `sate average` would replace it
    shutil.copytree(a_pack, store / "asr_pack")
    (store / "asr_dev").mkdir()
    shutil.copyfile(a_pack / "model.pt", st / "model.pt")
    shutil.copytree(a_pack, st / "pack")
    for name, there in (("model.pt", "asr.pt"), ("pack", "asr_pack"), ("decode_dev", "asr_dev")):
        (asr / name).symlink_to(Path("..") / ".." / "store" / there)
    before = {str(p): p.read_bytes() for p in store.rglob("*") if p.is_file()}
    for argv, out in [(["average", "--exp", str(st), "--last", "1", "--out"], asr / "model.pt"),
                      (["pack", "--model", str(st / "model.pt"), "--data", str(prepared_data), "--out"], asr / "pack"),
                      (["evaluate", "--model", str(st / "pack"), "--data", str(prepared_data), "--split", "dev",
                        "--out"], asr / "decode_dev")]:
        assert main([*argv, str(out)]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"--out {out} (a link to {os.path.realpath(out)}): it lies in the " \
            f"experiment {asr}, and " in err, err
        # removing the link would not do: the output would still be named in exp/asr
        assert err.endswith(f"is of the experiment {st}: it would be taken for asr's own; write it in {st} or "
                            "outside any experiment\n"), err
    assert {str(p): p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    # exp/st/model.pt linked to exp/asr's: the average of exp/asr written there would be taken for exp/st's
    (st / "model.pt").unlink()
    (st / "model.pt").symlink_to(Path("..") / "asr" / "model.pt")
    with pytest.raises(SateError, match="it lies in the experiment .*st, and the average is of the experiment .*asr"):
        check_same_experiment(st / "model.pt", [asr], "the average")
    # let through: an experiment that is a link, exp/ linked to a bigger disk, links within one experiment, packs
    # linked to or from a shared models/ folder
    (tmp_path / "scratch").mkdir()
    scratch = experiment(tmp_path / "scratch" / "st3")
    (tmp_path / "exp" / "st3").symlink_to(Path("..") / "scratch" / "st3")
    check_same_experiment(tmp_path / "exp" / "st3" / "model.pt", [tmp_path / "exp" / "st3"], "the average")
    check_same_experiment(tmp_path / "exp" / "st3" / "pack", [scratch / "model.pt"], "--model")
    (tmp_path / "big").symlink_to(tmp_path / "exp")
    check_same_experiment(tmp_path / "big" / "asr" / "avg.pt", [asr], "the average")
    (asr / "avg2.pt").write_bytes(b"an average")
    (asr / "best.pt").symlink_to("avg2.pt")
    check_same_experiment(asr / "best.pt", [tmp_path / "big" / "asr"], "the average")
    (tmp_path / "models").mkdir()
    (scratch / "pack").symlink_to(tmp_path / "models" / "st3")
    check_same_experiment(scratch / "pack", [scratch / "model.pt"], "--model")
    (tmp_path / "models" / "st").symlink_to(st / "pack")
    check_same_experiment(tmp_path / "models" / "st", [st / "model.pt"], "--model")
    check_same_experiment(asr / "decode_dev", [store / "asr_pack"], "--model")  # a pack from outside says nothing
    # a source named in an experiment but a link out of it (exp/st/model.pt kept in a shared models/ folder) is that
    # experiment's: judged by the link's target alone it was let through into another experiment (review27z)
    shutil.copyfile(a_pack / "model.pt", tmp_path / "models" / "st.pt")
    (st / "shared.pt").symlink_to(tmp_path / "models" / "st.pt")
    st2 = experiment(tmp_path / "exp" / "st2")
    with pytest.raises(SateError, match="it lies in the experiment .*st2, and --model is of the experiment .*st:"):
        check_same_experiment(st2 / "pack", [st / "shared.pt"], "--model")
    check_same_experiment(st / "pack2", [st / "shared.pt"], "--model")  # its own experiment


def test_an_evaluation_is_not_written_through_a_link_into_another_experiment(
        tmp_path: Path, a_pack: Path, prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate evaluate --out EXP/decode_dev` where that folder is a link left into another experiment's
    (`ln -s ../st_v1/decode_dev exp/st_v2/decode_dev`) replaced st_v1's results with st_v2's, and `sate report`
    tabled them as st_v1's, exit 0 (27th hostile pass, review27c). Refused before any work, naming the link; the
    same folder linked to a store outside any experiment (a bigger disk) is written there."""
    old, new = experiment(tmp_path / "exp" / "st_v1"), experiment(tmp_path / "exp" / "st_v2")
    shutil.copytree(a_pack, new / "pack")
    (old / "decode_dev").mkdir()
    (old / "decode_dev" / "results.json").write_text('{"bleu": 31.4}\n')
    (new / "decode_dev").symlink_to(Path("..") / "st_v1" / "decode_dev")
    argv = ["evaluate", "--model", str(new / "pack"), "--data", str(prepared_data), "--split", "dev", "--out",
            str(new / "decode_dev")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (f"sate evaluate: error: --out {new / 'decode_dev'} (a link to {old / 'decode_dev'}): it lies in "
                   f"the experiment {old}, and --model {new / 'pack'} is of the experiment {new}: it would be taken "
                   f"for st_v1's own; remove the link, or write it in {new} or outside any experiment\n"), err
    assert sorted(os.listdir(old / "decode_dev")) == ["results.json"]
    (new / "decode_dev").unlink()
    (tmp_path / "store" / "dev").mkdir(parents=True)
    (new / "decode_dev").symlink_to(tmp_path / "store" / "dev")
    assert main(argv) == 0
    assert (tmp_path / "store" / "dev" / "results.json").is_file()


def test_a_file_output_ending_in_a_slash_is_refused(tmp_path: Path, a_pack: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`Path` drops a trailing '/': `--out nd/` wrote a file named nd (replacing one there) where the shell's
    `> nd/` says "Is a directory". Each option that writes one file refuses it before any work (`translate --format
    srt` takes it for the directory of its .srt files: tests/decode/test_translate.py)."""
    exp = experiment(tmp_path / "exp")
    (tmp_path / "nd").write_text("mine\n")
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.zeros(16000, dtype=np.float32), 16000)
    # and nd/. (twelfth hostile pass: translate --out nd/. replaced the file nd, where the shell says "Not a
    # directory"), nd/..
    for nd in (f"{tmp_path / 'nd'}/", f"{tmp_path / 'nd'}/.", f"{tmp_path / 'nd' / 'x'}/.."):
        for argv in (["average", "--exp", str(exp), "--last", "1", "--out", nd],
                     ["report", "--exp", str(exp), "--out", nd], ["report", "--exp", str(exp), "--curves", nd],
                     ["analyze", "attention", "--model", str(a_pack), "--out", nd, str(talk)],
                     ["latency-plot", "--out", nd, str(tmp_path / "results.json")]):
            with pytest.raises(SystemExit) as stop:
                main(argv)
            assert stop.value.code == 2
            assert capsys.readouterr().err.splitlines()[-1].endswith(
                f"{nd}: ends in '/', '.' or '..', which names a directory; this option writes one file: give the "
                "file's name"), argv
        assert main(["translate", "--model", str(a_pack), str(talk), "--out", nd]) == 2
        assert capsys.readouterr().err.strip().endswith(
            f"--out {nd}: ends in '/', '.' or '..', which names a directory; --format text writes one file: give "
            "the file's name (--format srt writes one .srt per input into a directory)")
        assert (tmp_path / "nd").read_text() == "mine\n"


def test_out_dash_is_refused_where_a_file_is_written(
        tmp_path: Path, a_pack: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--out -` wrote a file named '-' in the current directory (`average` a model there, exit 0). Options that
    write a model, a PNG or markdown refuse it before any work (`translate` takes it as standard output)."""
    exp = experiment(tmp_path / "exp")
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.zeros(16000, dtype=np.float32), 16000)
    monkeypatch.chdir(tmp_path)
    for argv in (["average", "--exp", str(exp), "--last", "1", "--out", "-"],
                 ["report", "--exp", str(exp), "--out", "-"], ["report", "--exp", str(exp), "--curves", "-"],
                 ["analyze", "attention", "--model", str(a_pack), "--out", "-", str(talk)],
                 ["latency-plot", "--out", "-", str(tmp_path / "results.json")]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            "'-' (standard output): this option writes a file; give its name (./- for a file named '-')"), argv
    assert not (tmp_path / "-").exists()  # translate --out -: tests/decode/test_translate.py


def test_an_image_is_named_as_the_png_it_is(tmp_path: Path, a_pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`report --curves plot.pdf` and `latency-plot --out plot.jpg` wrote a PNG under that name, exit 0 (nineteenth
    hostile pass); `analyze attention` alone refused it, untested. Every image output is refused so before any
    work (`report` checks --curves with the same `check_output`)."""
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.zeros(16000, dtype=np.float32), 16000)
    for name in ("plot.pdf", "plot.jpg", "plot", "plot.png.txt"):
        out = tmp_path / name
        for argv in (["latency-plot", "--out", str(out), str(tmp_path / "results.json")],
                     ["analyze", "attention", "--model", str(a_pack), "--out", str(out), str(talk)]):
            assert main(argv) == 2, argv
            assert capsys.readouterr().err.strip().endswith(f"{out}: the image is written as PNG; name it *.png"), argv
        with pytest.raises(SateError, match=rf"^--curves {re.escape(str(out))}: the image is written as PNG; name it "):
            check_output(out, "image", "--curves")
        assert not out.exists()
    assert check_output(tmp_path / "Plot.PNG", "image") == tmp_path / "Plot.PNG"  # the suffix in any case


def test_segment_out_ending_in_a_slash_is_a_directory_whatever_its_suffix(tmp_path: Path) -> None:
    """`segment talk.wav --out notes.jsonl/` (or `/.`) wrote the one file notes.jsonl: `Path` drops the slash, and
    the .jsonl suffix then chose one output for all inputs (twelfth hostile pass). It names a directory."""
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.zeros(16000, dtype=np.float32), 16000)
    for k, spelled in enumerate(("/", "/.")):
        out = tmp_path / f"notes{k}.jsonl"
        assert main(["segment", str(talk), "--vad", "energy", "--out", f"{out}{spelled}"]) == 0
        assert out.is_dir() and [p.name for p in out.iterdir()] == ["talk.jsonl"]
    (tmp_path / "mine.jsonl").write_text("mine\n")
    assert main(["segment", str(talk), "--vad", "energy", "--out", f"{tmp_path / 'mine.jsonl'}/."]) == 2
    assert (tmp_path / "mine.jsonl").read_text() == "mine\n"


def test_pack_out_a_symlink_replaces_the_pack_it_names(tmp_path: Path, prepared_data: Path, a_pack: Path) -> None:
    model = model_file(tmp_path / "mt.pt", prepared_data)
    real = tmp_path / "real-pack"
    pack(model, prepared_data, real)
    (tmp_path / "current").symlink_to(real)
    assert main(["pack", "--model", str(model), "--data", str(prepared_data), "--out", str(tmp_path / "current"),
                 "--decode", "beam=3"]) == 0
    assert (tmp_path / "current").is_symlink() and "beam: 3" in (real / "sate.yaml").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "mt.pt", "real-pack"]


def test_pack_out_dot_and_data_dirs_are_refused(tmp_path: Path, prepared_data: Path, a_pack: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    model = model_file(tmp_path / "mt.pt", prepared_data)
    monkeypatch.chdir(tmp_path)
    assert main(["pack", "--model", str(model), "--data", str(prepared_data), "--out", "."]) == 2
    assert "not a packed model" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["mt.pt"]
    assert main(["vocab", "--data", str(a_pack), "--joint", "30"]) == 2  # would replace the pack's vocabularies
    assert "is a packed model" in capsys.readouterr().err
    exp = experiment(tmp_path / "exp")
    assert main(["features", "--data", str(exp / "checkpoints")]) == 2
    assert "is a checkpoint folder" in capsys.readouterr().err


def test_text_never_goes_into_a_data_directorys_stored_features_or_over_a_lock(tmp_path: Path,
                                                                                prepared_data: Path) -> None:
    """The feature indexes and records under DATA/fbank (and the frozen and MT text stores) are text too: a
    translation written over `fbank/dev.scp` or `fbank/dev/sizes.json` exited 0 and lost the index."""
    stored = [prepared_data / "fbank" / "dev.scp", prepared_data / "fbank" / "dev" / "sizes.json",
              prepared_data / "fbank" / "dev" / "new.txt"]
    for path in stored:
        assert path.name == "new.txt" or path.is_file()
        with pytest.raises(SateError, match="fbank holds a data directory's stored features or text"):
            check_output(path, "text")
    for store in ("frozen", "mt_bin"):
        with pytest.raises(SateError, match=f"{store} holds a data directory's stored features"):
            check_output(prepared_data / store / "key" / "out.txt", "text")
    with pytest.raises(SateError, match="fbank holds"):
        check_output(prepared_data / "fbank" / "dev", "directory")
    # the stored folder given for its data directory (`sate features --data DATA/fbank`) names the data directory
    # (twenty-first hostile pass): it said only that sate writes there, to a user running sate
    for option, kind in (("--data", "data"), ("--out", "directory"), ("--exp", "experiment")):
        with pytest.raises(SateError) as caught:
            check_output(prepared_data / "fbank", kind, option)
        assert str(caught.value) == (f"{option} {prepared_data / 'fbank'}: {prepared_data / 'fbank'} holds a data "
                                     "directory's stored features or text, which only sate writes there (the data "
                                     f"directory is {prepared_data})")
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "features.lock").write_text("12\n")
    (tmp_path / "locks" / "train.lock").write_text('{"pid": 12}\n')
    for name, whose in [("features.lock", "sate features"), ("train.lock", "sate train")]:
        with pytest.raises(SateError, match=f"it is {whose}'s {name}"):
            check_output(tmp_path / "locks" / name, "text")
    # a folder named fbank among the user's own files is theirs
    (tmp_path / "fbank").mkdir()
    assert check_output(tmp_path / "fbank" / "out.txt", "text") == tmp_path / "fbank" / "out.txt"


def segmented_talk(tmp_path: Path) -> tuple[Path, str]:
    """Two tones with a pause between (two segments for the energy VAD), and what `sate segment` writes for them."""
    talk = tmp_path / "talk.wav"
    tone = 0.3 * np.sin(np.arange(48000) * 0.05).astype(np.float32)
    sf.write(talk, np.concatenate([tone, np.zeros(16000, np.float32), tone]), 16000)
    assert main(["segment", str(talk), "--vad", "energy", "--out", str(tmp_path / "file.jsonl")]) == 0
    return talk, (tmp_path / "file.jsonl").read_text()


def test_text_goes_into_a_named_pipe_or_dev_null_in_place(tmp_path: Path) -> None:
    """A stream has nothing to replace: `--out /dev/stdout`, `/dev/null` or a FIFO is written as `>` would."""
    import threading

    talk, expected = segmented_talk(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()))
    reader.start()
    assert main(["segment", str(talk), "--vad", "energy", "--out", str(fifo)]) == 0
    reader.join(timeout=30)
    assert read == [expected] and expected.count("\n") >= 2
    assert fifo.exists() and not fifo.is_file()  # the pipe itself stays: nothing was renamed over it
    assert check_output(Path("/dev/null"), "text") == Path("/dev/null")
    assert main(["segment", str(talk), "--vad", "energy", "--out", "/dev/null"]) == 0
    with pytest.raises(SateError, match="not a directory"):  # a stream is text's only: a pack goes in a directory
        check_output(fifo, "pack")


@pytest.mark.parametrize("kind", ["directory", "data", "experiment", "corpus", "pack", "model", "image"])
def test_a_pipe_given_for_a_directory_or_a_binary_file_is_named_a_stream(kind: str) -> None:
    """`sate prep --out /dev/stdout | tee log` (standard output a pipe) resolved to /proc/self/fd/pipe:[N] and was
    "refusing to write there: /proc is the kernel's own file system", naming a place nobody typed; on a terminal it
    was "not a directory" (twenty-seventh hostile pass). A pipe is no directory either way; `average --out
    /dev/stdout | cat` (a model), `latency-plot --out` (a PNG) were told the same of /proc."""
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(SateError, match=rf"^--out /dev/fd/{write_end}: (not a directory \(it is descriptor "
                                            rf"{write_end}\)$|it is descriptor {write_end}, where .* give a file's "
                                            "name)"):
            check_output(Path(f"/dev/fd/{write_end}"), kind)
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize("kind", ["results", "model", "image", "data"])
def test_a_pipe_inside_an_output_folder_or_under_a_descriptor_is_named_for_what_it_is(tmp_path: Path,
                                                                                     kind: str) -> None:
    """The message above ("give a file's name") went to every stream (review of the twenty-seventh hostile pass):
    also a named pipe or a link to /dev/null inside `evaluate --out EV` (EV/hyp.txt, which evaluate names; before:
    "refusing to replace it: not a regular file") and a user's own FIFO. A descriptor only is named so, and a path
    under one (`prep --out /dev/stdout/data` on a pipe was "/proc is the kernel's own file system")."""
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "null.png").symlink_to(os.devnull)
    directory = kind == "data"
    for name in ("fifo.png", "null.png"):
        with pytest.raises(SateError, match=r"not a directory$" if directory else
                           r"refusing to replace it: not a regular file$") as refused:
            check_output(tmp_path / name, kind)
        assert "stream" not in str(refused.value) and "descriptor" not in str(refused.value)
    read_end, write_end = os.pipe()
    try:
        (tmp_path / "out.png").symlink_to(f"/dev/fd/{write_end}")
        with pytest.raises(SateError, match=r"not a directory \(it is descriptor" if directory else
                           rf"out.png \(leading to descriptor {write_end}\): refusing to replace it: not a regular "
                           "file$"):
            check_output(tmp_path / "out.png", kind)
        with pytest.raises(SateError, match=rf"^--out /dev/fd/{write_end}/x.png: cannot write \(/dev/fd/{write_end} "
                                            rf"is not a directory: it is descriptor {write_end}\)$"):
            check_output(Path(f"/dev/fd/{write_end}/x.png"), kind)
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.slow
def test_dev_stdout_appended_to_a_file_is_written_through_the_descriptor(tmp_path: Path) -> None:
    """`--out /dev/stdout >> log.txt`: /dev/stdout resolves to log.txt, a regular file, which the atomic write
    replaced, so the lines `>>` was to append after were lost. This process's own descriptors (/dev/stdout,
    /dev/stderr, /dev/fd/N) are written through, as `>>` and `>` opened them."""
    talk, expected = segmented_talk(tmp_path)
    log = tmp_path / "log.txt"
    for out in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        log.write_text("an earlier line\n")
        with open(log, "a") as appended:
            run = subprocess.run([sys.executable, "-m", "sate.cli", "segment", str(talk), "--vad", "energy", "--out",
                                  out], stdout=appended, stderr=subprocess.PIPE, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert log.read_text() == "an earlier line\n" + expected, out


@pytest.mark.slow
def test_an_output_naming_standard_input_or_a_descriptor_open_for_reading_is_refused(tmp_path: Path) -> None:
    """`--out /dev/stdin < notes.txt`: /dev/stdin resolves to notes.txt, which the atomic write replaced with the
    segments, exit 0; the shell gave the file to be read. So did a symlink to /dev/stdin; `--out /dev/fd/3` under
    `3< notes.txt` was 'Bad file descriptor' alone. A link to /dev/stdout is written through the descriptor, as
    /dev/stdout is (appended after `>>`)."""
    talk, expected = segmented_talk(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    (tmp_path / "in").symlink_to("/dev/stdin")
    (tmp_path / "out").symlink_to("/dev/stdout")
    sate = [sys.executable, "-m", "sate.cli", "segment", str(talk), "--vad", "energy", "--out"]
    for out in ("/dev/stdin", str(tmp_path / "in"), "/dev/fd/0", "/dev/fd/N"):
        with open(notes) as stdin, open(notes) as other:
            fds = (other.fileno(),) if out == "/dev/fd/N" else ()
            out = out.replace("N", str(other.fileno()))
            run = subprocess.run([*sate, out], stdin=stdin, pass_fds=fds, capture_output=True, text=True,
                                 timeout=120)
        assert run.returncode == 2, (out, run.stderr)
        what = (f"names descriptor {fds[0] if fds else 0}, open for reading only ({notes})" if fds else
                f"names standard input ({notes}), which is for reading")
        assert run.stderr.strip() == (f"sate segment: error: --out {out}: {what}: refusing to write into it; give the "
                                      "output's own name"), out
        assert notes.read_text() == "my notes\n"
    with open(notes, "a") as appended:
        run = subprocess.run([*sate, str(tmp_path / "out")], stdout=appended, stderr=subprocess.PIPE, text=True,
                             timeout=120)
    assert run.returncode == 0, run.stderr
    assert notes.read_text() == "my notes\n" + expected


def test_a_refusal_through_a_symlink_names_the_link_and_where_it_leads(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`--out l/out.txt`, a link to a directory or to a data directory's cmvn.json, was refused naming the target
    alone, which the user never typed."""
    talk, _ = segmented_talk(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "l").mkdir()
    link = tmp_path / "l" / "out.txt"
    link.symlink_to("../folder")
    assert main(["translate", "--model", "unused", str(talk), "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sate translate: error: --out {link} (leading to {tmp_path / 'folder'}): is a directory")
    (tmp_path / "cmvn.json").write_text("{}")
    (tmp_path / "vocab.json").write_text("{}")
    (tmp_path / "l" / "c.txt").symlink_to("../cmvn.json")
    with pytest.raises(SateError) as refused:
        check_output(tmp_path / "l" / "c.txt", "text")
    assert str(refused.value) == (f"--out {tmp_path / 'l' / 'c.txt'} (leading to {tmp_path / 'cmvn.json'}): refusing "
                                  "to replace it: it is sate features's cmvn.json")


def test_nothing_is_written_in_a_downloaded_model_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`translate --out WHISPER/tokenizer.json` replaced a Whisper directory's tokenizer with translation text, exit
    0 (text over text); a Hugging Face cache's snapshot holds links into blobs/, whose folder holds no config.json,
    so the folder the user named decides too."""
    talk, _ = segmented_talk(tmp_path)
    whisper = tmp_path / "whisper"
    whisper.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (whisper / name).write_text("{}\n")
    (whisper / "model.bin").write_bytes(b"\0" * 8)
    snapshot, blobs = tmp_path / "hub" / "snapshots" / "abc", tmp_path / "hub" / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for name, blob in (("config.json", "1"), ("vocab.json", "2"), ("model.safetensors", "3")):
        (blobs / blob).write_text("{}\n")
        (snapshot / name).symlink_to(blobs / blob)
    for out, folder in ((whisper / "tokenizer.json", whisper), (snapshot / "vocab.json", snapshot),
                        (whisper / "segments.jsonl", whisper)):
        assert main(["segment", str(talk), "--vad", "energy", "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip() == (f"sate segment: error: --out {out}: {folder} is a downloaded model "
                                                   "directory (config.json beside its weights), which sate reads and "
                                                   "never writes")
    assert (whisper / "tokenizer.json").read_text() == (blobs / "2").read_text() == "{}\n"
    assert sorted(p.name for p in whisper.iterdir()) == ["config.json", "model.bin", "tokenizer.json"]
    with pytest.raises(SateError, match="downloaded model directory"):
        check_output(whisper / "out", "directory")


def test_a_directory_where_a_command_writes_its_own_file_is_refused_before_any_work(
        tmp_path: Path, prepared_data: Path, synth_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`DATA/dev.jsonl`, `DATA/tokens_src.txt` or `DATA/cmvn.json` a directory: the rename at the end failed, naming
    a temporary file, after `sate prep` had written the other splits, `sate vocab` had trained SentencePiece and
    `sate features` had computed every feature."""
    out = tmp_path / "prepped"
    (out / "dev.jsonl").mkdir(parents=True)
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate prep: error: --out {out}: {out}/dev.jsonl is a directory, where "
                                               "the command writes its file dev.jsonl")
    assert sorted(p.name for p in out.iterdir()) == ["dev.jsonl"]  # train.jsonl was written before
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, ignore=shutil.ignore_patterns("fbank", "cmvn.json", "tokens_src.txt"))
    (data / "tokens_src.txt").mkdir()
    (data / "cmvn.json").mkdir()
    assert main(["vocab", "--data", str(data), "--src-size", "40", "--tgt-size", "40"]) == 2
    assert f"{data}/tokens_src.txt is a directory, where the command writes its file" in capsys.readouterr().err
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
    assert f"{data}/cmvn.json is a directory, where the command writes its file" in capsys.readouterr().err
    assert not (data / "fbank").exists() and not list(data.glob(".*.tmp"))
    # a broken link was written through, making the folders it named anywhere (/nonexistent/; fourteenth pass)
    (data / "tokens_src.txt").rmdir()
    (data / "tokens_src.txt").symlink_to(tmp_path / "nowhere" / "tokens.txt")
    assert main(["vocab", "--data", str(data), "--src-size", "40", "--tgt-size", "40"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate vocab: error: --data {data}: {data}/tokens_src.txt is a broken symlink (to {tmp_path}/nowhere/"
        "tokens.txt, which is not there), where the command writes its file tokens_src.txt: remove it")
    assert not (tmp_path / "nowhere").exists()


def test_an_own_file_linked_into_a_pack_or_a_checkpoint_folder_is_refused_before_any_work(
        tmp_path: Path, prepared_data: Path, synth_corpus: Path, a_pack: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A data directory whose cmvn.json or token list is a symlink to a pack's (its statistics or vocabulary shared
    by a link), or whose manifest links into a checkpoint folder: `sate features`, `sate vocab` and `sate prep`
    wrote through the link, replacing the pack's file (which must keep matching its model) or writing among the
    checkpoints."""
    before = {p.name: p.read_bytes() for p in a_pack.iterdir() if p.is_file()}
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, ignore=shutil.ignore_patterns("fbank", "cmvn.json", "tokens_tgt.txt"))
    (data / "tokens_tgt.txt").symlink_to(a_pack / "tokens_tgt.txt")
    assert main(["vocab", "--data", str(data), "--src-size", "48", "--tgt-size", "64"]) == 2
    err = capsys.readouterr().err
    assert f"{data}/tokens_tgt.txt is a symlink to {a_pack}/tokens_tgt.txt, where the command would write its " \
           f"file tokens_tgt.txt: {a_pack} is a packed model" in err and err.count("\n") == 1, err
    (data / "cmvn.json").symlink_to(a_pack / "cmvn.json")  # the pack holds none: the link is broken
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
    assert f"{data}/cmvn.json is a symlink to {a_pack}/cmvn.json" in capsys.readouterr().err
    assert not (data / "fbank").exists()
    exp = experiment(tmp_path / "exp")
    out = tmp_path / "prepped"
    out.mkdir()
    (out / "dev.jsonl").symlink_to(exp / "checkpoints" / "dev.jsonl")
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(out)]) == 2
    assert "is a checkpoint folder, which only `sate train` writes" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["dev.jsonl"]
    assert {p.name: p.read_bytes() for p in a_pack.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in (exp / "checkpoints").iterdir()) == ["epoch000.ckpt", "last.ckpt"]


def test_an_own_file_linked_into_another_data_directory_is_refused_before_any_work(
        tmp_path: Path, prepared_data: Path, synth_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A data directory whose token list and SentencePiece model were symlinks to another data directory's (a
    vocabulary shared by links): `sate vocab` replaced the other directory's vocabulary, exit 0, and that
    directory's models no longer resumed or packed (eleventh hostile pass); likewise a manifest (`sate prep`) or
    cmvn.json (`sate features`). A link to a file of no data directory (another disk), or to a file of its own
    directory, is taken."""
    other = tmp_path / "other"
    shutil.copytree(prepared_data, other, ignore=shutil.ignore_patterns("fbank"))
    before = {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()}
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, ignore=shutil.ignore_patterns("fbank", "spm_tgt.model", "dev.jsonl"))
    (data / "spm_tgt.model").symlink_to(other / "spm_tgt.model")
    assert main(["vocab", "--data", str(data), "--src-size", "40", "--tgt-size", "60"]) == 2
    err = capsys.readouterr().err
    assert err == (f"sate vocab: error: --data {data}: {data}/spm_tgt.model is a symlink to {other}/spm_tgt.model, "
                   f"where the command would write its file spm_tgt.model: {other} is another data directory, whose "
                   "file this run would replace; remove the link\n"), err
    (data / "dev.jsonl").symlink_to(other / "dev.jsonl")
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(data)]) == 2
    assert f"{data}/dev.jsonl is a symlink to {other}/dev.jsonl" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()} == before
    disk = tmp_path / "disk"
    disk.mkdir()
    shutil.copyfile(other / "spm_tgt.model", disk / "spm_tgt.model")
    (data / "spm_tgt.model").unlink()
    (data / "spm_tgt.model").symlink_to(disk / "spm_tgt.model")  # a file of no data directory: written there
    (data / "dev.jsonl").unlink()
    check_own_files(data, ["spm_tgt.model", "tokens_src.txt"])
    (data / "tokens_src.txt").rename(data / "tokens_src.real")
    (data / "tokens_src.txt").symlink_to(data / "tokens_src.real")  # a file of its own directory
    check_own_files(data, ["spm_tgt.model", "tokens_src.txt"])



def test_an_own_file_linked_into_an_evaluate_run_names_the_run(tmp_path: Path, prepared_data: Path,
                                                                synth_corpus: Path) -> None:
    """Fourteenth hostile pass: `sate prep --out D` whose D/dev.jsonl linked to an evaluate --stream run's
    delays.jsonl was refused, naming the run's folder "another data directory" (it holds a .jsonl)."""
    run = tmp_path / "ev"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"mode": "st", "split": "dev", "bleu": 1.0}, indent=1))
    (run / "delays.jsonl").write_text('{"id": "a", "delays": [1.0]}\n')
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.jsonl").symlink_to(run / "delays.jsonl")
    with pytest.raises(SateError, match=re.escape(f"{run} is another `sate evaluate` run's folder, whose file this "
                                                  "run would replace; remove the link")):
        check_own_files(data, ["dev.jsonl"], "--out")


def test_an_own_file_linked_to_a_file_of_another_kind_is_refused(
        tmp_path: Path, prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A data directory's cmvn.json or token list linked by mistake to a file of the user's on no data directory
    (notes.txt) had it replaced with CMVN statistics or a token list, exit 0 (thirteenth hostile pass): a link is
    written through only to a file of its kind (or an empty one)."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, ignore=shutil.ignore_patterns("fbank", "cmvn.json", "tokens_src.txt"))
    notes = tmp_path / "home" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("my notes\n")
    (data / "cmvn.json").symlink_to(notes)
    (data / "tokens_src.txt").symlink_to(notes)
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
    assert capsys.readouterr().err == (
        f"sate features: error: --data {data}: {data}/cmvn.json is a symlink to {notes}, where the command would "
        "write its file cmvn.json: it is no cmvn.json (it holds other text), and would be replaced; remove the link\n")
    assert main(["vocab", "--data", str(data), "--src-size", "40", "--tgt-size", "60"]) == 2
    assert f"{data}/tokens_src.txt is a symlink to {notes}, where the command would write its file tokens_src.txt: " \
           "it is no tokens_src.txt (it holds other text)" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"
    model = tmp_path / "home" / "model.bin"
    model.write_bytes(b"PK\x03\x04" + bytes(100))
    (data / "spm_src.model").unlink()
    (data / "spm_src.model").symlink_to(model)
    with pytest.raises(SateError, match=r"spm_src\.model: it is no spm_src\.model \(it holds a zip archive"):
        check_own_files(data, ["spm_src.model"])
    for name, kind in (("cmvn.json", "cmvn.json"), ("tokens_src.txt", "tokens_src.txt"),
                       ("spm_src.model", "spm_src.model")):  # a file of its kind, or an empty one, is written there
        (data / name).unlink()
        target = tmp_path / "home" / f"shared.{name}"
        shutil.copyfile(prepared_data / kind, target)
        (data / name).symlink_to(target)
    (tmp_path / "home" / "empty.txt").touch()
    (data / "tokens_tgt.txt").unlink()
    (data / "tokens_tgt.txt").symlink_to(tmp_path / "home" / "empty.txt")
    check_own_files(data, ["cmvn.json", "tokens_src.txt", "spm_src.model", "tokens_tgt.txt"])

def test_a_data_directory_is_never_written_into_an_experiment(tmp_path: Path, synth_corpus: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`sate prep --out EXP` then `sate features --data EXP` made the experiment a data directory, which `sate train
    --exp EXP` then refused to resume ("it is a data directory (it holds fbank)", tenth hostile pass); as `sate synth
    --out` and `sate train --exp` refuse the other way round, each is refused before any work."""
    exp = experiment(tmp_path / "exp")
    before = sorted(p.name for p in exp.iterdir())
    for argv in (["prep", "--mustc-root", str(synth_corpus), "--out", str(exp)],
                 ["features", "--data", str(exp), "--jobs", "1"],
                 ["vocab", "--data", str(exp), "--src-size", "48", "--tgt-size", "64"]):
        assert main(argv) == 2
        option = "--out" if argv[0] == "prep" else "--data"
        assert capsys.readouterr().err.strip() == (
            f"sate {argv[0]}: error: {option} {exp}: refusing to write a data directory into it: it is an experiment "
            "(it holds checkpoints); give a new or other directory")
    assert sorted(p.name for p in exp.iterdir()) == before


def test_stored_features_linked_from_another_data_directory_are_refused(tmp_path: Path, prepared_data: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`DATA/fbank` a symlink to another data directory's fbank/ (to share its features): `sate features` on a
    smaller train split replaced that directory's train.scp, whose next `sate train` found "no features for 6 of
    the 12 rows" (tenth hostile pass). A link to a folder of no data directory (another disk) is taken."""
    other = tmp_path / "other"
    shutil.copytree(prepared_data, other)
    before = (other / "fbank" / "train.scp").read_bytes()
    data = tmp_path / "data"
    data.mkdir()
    rows = (prepared_data / "train.jsonl").read_text().splitlines(keepends=True)
    (data / "train.jsonl").write_text("".join(rows[:6]))
    (data / "fbank").symlink_to(other / "fbank")
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate features: error: --data {data}: {data}/fbank is a symlink to {other}/fbank, the fbank/ of another data "
        f"directory ({other}), whose files this run would replace; remove the link")
    assert (other / "fbank" / "train.scp").read_bytes() == before
    (data / "fbank").unlink()
    (tmp_path / "disk" / "store").mkdir(parents=True)
    (data / "fbank").symlink_to(tmp_path / "disk" / "store")
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 0
    assert (tmp_path / "disk" / "store" / "train.scp").is_file()


def test_a_marian_folder_linked_into_a_pack_is_refused_before_any_work(tmp_path: Path, prepared_data: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`DATA/marian` a symlink to a pack's `marian/` (a Marian vocabulary shared by a link): `sate vocab --marian`
    wrote the new model's files through it, replacing the pack's (which must keep matching its model), exit 0
    (tenth hostile pass). The link is on the way to each file, not the file itself."""
    import sentencepiece as spm

    hub = tmp_path / "hub"  # a Marian model's tokenisation: its two SentencePiece models and their joint ids
    hub.mkdir()
    pieces = {"</s>": 0, "<unk>": 1}
    for name, side in (("source.spm", "src"), ("target.spm", "tgt")):
        shutil.copyfile(prepared_data / f"spm_{side}.model", hub / name)
        sp = spm.SentencePieceProcessor(model_file=str(hub / name))
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                pieces.setdefault(sp.id_to_piece(i), len(pieces))
    pieces["<pad>"] = len(pieces)
    (hub / "vocab.json").write_text(json.dumps(pieces))
    shared = tmp_path / "pack"
    (shared / "marian").mkdir(parents=True)
    (shared / "sate.yaml").write_text("format: sate-pack\n")
    (shared / "marian" / "source.spm").write_bytes(b"the pack's own")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(prepared_data / "train.jsonl", data / "train.jsonl")
    (data / "marian").symlink_to(shared / "marian")
    assert main(["vocab", "--data", str(data), "--marian", str(hub)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate vocab: error: --data {data}: {data}/marian/source.spm leads through a symlink to "
        f"{shared}/marian/source.spm, where the command would write its file marian/source.spm: {shared} is a "
        "packed model, which only `sate pack` writes (as a whole)")
    assert sorted(p.name for p in (shared / "marian").iterdir()) == ["source.spm"]
    assert (shared / "marian" / "source.spm").read_bytes() == b"the pack's own"
    (data / "marian").unlink()
    assert main(["vocab", "--data", str(data), "--marian", str(hub)]) == 0
    assert (data / "marian" / "source.spm").read_bytes() == (hub / "source.spm").read_bytes()


@pytest.mark.slow
def test_a_run_folders_file_linked_to_a_users_file_outside_is_refused_before_any_work(
        tmp_path: Path, a_pack: Path, prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate evaluate --out EV` again with EV/hyp.txt (or results.json, ref.txt...) a symlink to a user's notes
    outside EV, and `analyze locality --out DIR` with DIR/locality.csv one: the notes were replaced with the run's
    file, exit 0 (eighteenth hostile pass, the writes harness's links). Names no content tells apart are refused
    where a link leads out of the folder to a file with something in it."""
    notes = tmp_path / "home" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("my notes\n")
    out = tmp_path / "ev"
    argv = ["evaluate", "--model", str(a_pack), "--data", str(prepared_data), "--split", "dev", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    for name in ("hyp.txt", "results.json"):
        saved = (out / name).read_bytes()
        (out / name).unlink()
        (out / name).symlink_to(notes)
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"sate evaluate: error: --out {out}: {out / name} is a symlink to {notes}, where the command would write "
            f"its file {name}: a file outside {out}, which this run would replace; remove the link\n")
        assert notes.read_text() == "my notes\n"
        (out / name).unlink()
        (out / name).write_bytes(saved)
    assert main(argv) == 0  # its own files, replaced
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    (analysis / "locality.csv").symlink_to(notes)
    with pytest.raises(SateError, match="locality.csv: a file outside .* which this run would replace"):
        check_own_files(analysis, ["locality.csv"], "--out")


def test_a_name_sate_gives_linked_to_another_file_in_its_own_folder_is_refused(tmp_path: Path) -> None:
    """`translate --format srt --out DIR/` with DIR/talk.srt a symlink to DIR/notes.txt, `segment --out DIR/` with
    DIR/talk.jsonl one, `evaluate --out EV` with EV/hyp.txt linked to EV/notes.txt, `report` with EXP/results.md
    to EXP/notes.md, `analyze locality` with locality.md to notes.txt: the notes were replaced, exit 0; only a link
    out of the folder was refused (nineteenth hostile pass)."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "talk.srt").symlink_to("notes.txt")
    with pytest.raises(SateError, match=r"talk.srt is a symlink to .*notes.txt, where the command would write its "
                                        rf"file talk.srt: another file in {folder}, which this run would replace"):
        check_not_linked_out([folder / "talk.srt"])
    (folder / "hyp.txt").symlink_to("notes.txt")
    with pytest.raises(SateError, match=f"hyp.txt: another file in {folder}, which this run would replace"):
        check_own_files(folder, ["hyp.txt"], "--out")
    (folder / "empty.txt").touch()  # nothing there to lose: written through, as before
    (folder / "talk2.srt").symlink_to("empty.txt")
    check_not_linked_out([folder / "talk2.srt"])
    assert (folder / "notes.txt").read_text() == "my notes\n"


def test_a_name_sate_gives_per_input_that_is_no_file_is_refused(tmp_path: Path) -> None:
    """`translate --format srt --out DIR/` with a named pipe at DIR/talk.srt waited for a reader for ever once the
    talk was translated; a broken link there (or at `segment --out DIR/`'s DIR/talk.jsonl) was written through,
    making the folders it named (nineteenth hostile pass)."""
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / "talk.srt")
    (folder / "talk.jsonl").symlink_to(tmp_path / "gone" / "deeper" / "x.jsonl")
    (folder / "loop.jsonl").symlink_to("loop.jsonl")
    (folder / "null.jsonl").symlink_to(os.devnull)
    for name, what in (("talk.srt", "a named pipe"), ("talk.jsonl", "a broken symlink"),
                       ("loop.jsonl", "a symlink loop"), ("null.jsonl", "a device or socket")):
        with pytest.raises(SateError, match=f"^--out {folder}: {folder / name} is {what}.*where the command writes "
                                            f"its file {name}: remove it$"):
            check_not_linked_out([folder / name])
    assert not (tmp_path / "gone").exists()


def test_an_append_only_output_or_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    """`chattr +a`: an append-only file cannot be replaced, nor a file renamed into an append-only folder, which
    `os.access` does not tell. `translate --out` there translated, then failed naming its temporary file, and in the
    folder left that file for good, as it could not be removed either (nineteenth hostile pass)."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "t.txt").write_text("old\n")
    if subprocess.run(["chattr", "+a", str(folder / "t.txt")], capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        with pytest.raises(SateError, match=r"t.txt: refusing to replace it: it is append-only \(chattr \+a\)"):
            check_output(folder / "t.txt", "text")
        subprocess.run(["chattr", "-a", str(folder / "t.txt")], check=True)
        subprocess.run(["chattr", "+a", str(folder)], check=True)
        for path, kind in ((folder / "new.txt", "text"), (folder, "directory"), (folder / "pack", "pack")):
            with pytest.raises(SateError, match=f"cannot write in {folder}: it is append-only"):
                check_output(path, kind)
        # a file a command keeps under its own name in a folder of the one it fills (vocab --marian's DATA/marian)
        with pytest.raises(SateError, match=f"^--data {tmp_path}: {folder} is append-only .* its file out/t.txt"):
            check_own_files(tmp_path, ["out/t.txt"])
    finally:
        subprocess.run(["chattr", "-a", str(folder / "t.txt"), str(folder)], check=True)
    assert check_output(folder / "t.txt", "text") == folder / "t.txt"


def test_an_append_only_file_a_command_keeps_under_its_own_name_is_refused(tmp_path: Path) -> None:
    """`sate prep --out OUT` again with OUT/tst-COMMON.jsonl append-only (`chattr +a`): dev.jsonl and train.jsonl
    were replaced, then the rename onto tst-COMMON.jsonl failed, naming a temporary file, and the set's journal was
    left (twentieth hostile pass). Refused before any work, as an append-only --out is."""
    manifest = tmp_path / "tst-COMMON.jsonl"
    manifest.write_text("")
    if subprocess.run(["chattr", "+a", str(manifest)], capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        with pytest.raises(SateError, match=f"^--out {tmp_path}: {manifest} is append-only \\(chattr \\+a\\), where "
                                            "the command renames its file tst-COMMON.jsonl into place; lift that"):
            check_own_files(tmp_path, ["dev.jsonl", "tst-COMMON.jsonl"], "--out")
    finally:
        subprocess.run(["chattr", "-a", str(manifest)], check=True)
    check_own_files(tmp_path, ["dev.jsonl", "tst-COMMON.jsonl"], "--out")


def test_a_file_a_command_keeps_that_is_append_only_or_immutable_is_refused_before_any_work(tmp_path: Path) -> None:
    """`chattr +a` or `+i` on a file a command replaces under its own name (a data directory's cmvn.json or token
    list, a manifest, an experiment's config.yaml or last.ckpt), or on a file in a pack `sate pack --out` replaces
    (or the pack's folder): no rename may replace or remove it. `sate features` computed every split, `sate vocab`
    trained both models and replaced one before failing at the token list, `sate prep` left half its set and its
    journal, `sate train` trained an epoch it could not save, each then naming a temporary file as "a special or
    protected file system"; `sate pack` said it packed, exit 0, and left `.PACK.old` for good (twentieth hostile
    pass)."""
    from sate.targets import check_run_folders  # train's own check of its files, before any work

    data, pack, exp = tmp_path / "data", tmp_path / "pack", tmp_path / "exp"
    for folder in (data, pack, exp / "checkpoints"):
        folder.mkdir(parents=True)
    (data / "tokens_src.txt").write_text("<blank>\n")
    (pack / "sate.yaml").write_text("task: st\n")
    (pack / "model.pt").write_bytes(b"PK")
    (exp / "config.yaml").write_text("task: mt\n")
    if subprocess.run(["chattr", "+a", str(data / "tokens_src.txt")], capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        with pytest.raises(SateError, match=f"^--data {data}: {data / 'tokens_src.txt'} is append-only \\(chattr "
                                            r"\+a\), where the command renames its file tokens_src.txt into place; "
                                            r"lift that \(chattr -a\)"):
            check_own_files(data, ["tokens_src.txt"])
        subprocess.run(["chattr", "-a", str(data / "tokens_src.txt")], check=True)
        subprocess.run(["chattr", "+i", str(data / "tokens_src.txt"), str(pack / "model.pt")], check=True)
        with pytest.raises(SateError, match=r"tokens_src.txt is immutable \(chattr \+i\), .*\(chattr -i\)"):
            check_own_files(data, ["tokens_src.txt"])
        with pytest.raises(SateError, match=f"^--out {pack}: refusing to replace it: {pack / 'model.pt'} is "
                                            r"immutable \(chattr \+i\), which could not be removed with the old pack"):
            check_output(pack, "pack")
        subprocess.run(["chattr", "-i", str(pack / "model.pt")], check=True)
        subprocess.run(["chattr", "+a", str(pack), str(exp / "config.yaml")], check=True)
        with pytest.raises(SateError, match=f"^--out {pack}: refusing to replace it: it is append-only"):
            check_output(pack, "pack")
        with pytest.raises(SateError, match=f"^--exp {exp}: {exp / 'config.yaml'} is append-only"):
            check_run_folders(exp)
    finally:
        subprocess.run(["chattr", "-a", "-i", str(data / "tokens_src.txt"), str(pack / "model.pt"), str(pack),
                        str(exp / "config.yaml")], check=True)
    check_own_files(data, ["tokens_src.txt"])
    assert check_output(pack, "pack") == pack
    check_run_folders(exp)


def test_an_output_on_the_kernels_file_systems_is_refused_before_any_work(tmp_path: Path) -> None:
    """`translate --out /proc/version` translated, then said "/proc/version: No such file or directory" of a file
    that is there (no file can be made in /proc, where the temporary one goes); `/sys/notes.txt` failed after the
    work as well (nineteenth hostile pass)."""
    if not Path("/proc/version").is_file() or not Path("/sys/kernel").is_dir():
        pytest.skip("needs /proc and /sys mounted")
    for path, kind, where in ((Path("/proc/version"), "text", "/proc is the kernel's own file system (proc)"),
                              (Path("/proc/notes.txt"), "text", "/proc is"),
                              (Path("/sys/kernel/avg.pt"), "model", "/sys is the kernel's own file system (sysfs)"),
                              (Path("/proc/ev"), "directory", "/proc is")):
        with pytest.raises(SateError, match=f"^--out {path}: refusing to write there: {re.escape(where)}"):
            check_output(path, kind)
    assert check_output(tmp_path / "t.txt", "text") == tmp_path / "t.txt"


def test_an_output_that_is_a_mount_point_is_refused_before_any_work(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file bind-mounted at an output's name (`mount --bind notes.txt EV/hyp.txt`): no rename may replace it, and
    the run did its work, then failed with "Device or resource busy" naming its temporary file (nineteenth hostile
    pass). The mounts are what /proc/self/mounts lists; here one is said to be there."""
    import sate.files as files  # the list of mounts, as the system would give it with a bind mount

    out = tmp_path / "hyp.txt"
    out.write_text("x\n")
    monkeypatch.setattr(files, "_mounts", lambda: [(Path("/"), "ext4"), (out, "ext4")])
    with pytest.raises(SateError, match=f"^--out {out}: refusing to replace it: it is a mount point"):
        check_output(out, "text")
    # the same for a file a command keeps under its own name (prep's DATA/dev.jsonl, vocab's token lists)
    with pytest.raises(SateError, match=f"^--data {tmp_path}: {out} is a mount point .* its file hyp.txt"):
        check_own_files(tmp_path, ["hyp.txt"])
    monkeypatch.setattr(files, "_mounts", lambda: [(Path("/"), "ext4")])
    assert check_output(out, "text") == out


def test_a_pack_with_a_mount_point_inside_is_refused_before_any_work(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate pack --out PACK` with a user's file bind-mounted at PACK/model.pt: the old pack was renamed aside, its
    removal failed at the mount point (EBUSY, ignored), and the run said it packed, exit 0, leaving .PACK.old for good
    (twentieth hostile pass). The mounts are what /proc/self/mounts lists; here one is said to be there."""
    import sate.files as files  # the list of mounts, as the system would give it with a bind mount

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("task: st\n")
    (pack / "model.pt").write_bytes(b"PK")
    monkeypatch.setattr(files, "_mounts", lambda: [(Path("/"), "ext4"), (pack / "model.pt", "ext4")])
    with pytest.raises(SateError, match=f"^--out {pack}: refusing to replace it: {pack / 'model.pt'} is a mount "
                                        "point .* could not be removed with the old pack; unmount it"):
        check_output(pack, "pack")
    monkeypatch.setattr(files, "_mounts", lambda: [(Path("/"), "ext4"), (tmp_path / "packed", "ext4")])
    assert check_output(pack, "pack") == pack  # a mount beside it (PACK's name a prefix of it) is none of its


def test_an_evaluation_again_under_a_linked_folder_keeps_its_delays(tmp_path: Path) -> None:
    """`sate evaluate --stream --out PROJ/ev` again, PROJ a symlink to a scratch disk: the run's own delays.jsonl
    was judged as a manifest and refused, "it is no delays.jsonl (it holds other text)" (twentieth hostile pass)."""
    ev = tmp_path / "big" / "ev"
    ev.mkdir(parents=True)
    (ev / "delays.jsonl").write_text('{"id": "a", "duration": 1.0, "delays": [0.5], "elapsed": [0.5]}\n')
    (tmp_path / "proj").symlink_to(tmp_path / "big")
    check_own_files(tmp_path / "proj" / "ev", ["delays.jsonl"], "--out")
    (ev / "delays.jsonl").write_text("my notes\n")
    with pytest.raises(SateError, match="it is no delays.jsonl"):
        check_own_files(tmp_path / "proj" / "ev", ["delays.jsonl"], "--out")


def test_an_evaluate_run_does_not_become_a_data_directory(tmp_path: Path) -> None:
    """`sate prep --out EV` (an evaluate run's folder) wrote its manifests beside the run's files, exit 0: the run's
    delays.jsonl was read as a split by `sate features` ("manifest row misses key(s)"), and `sate evaluate --out EV`
    was then refused, EV being a data directory (nineteenth hostile pass). As an experiment is, it is refused for
    prep, features and vocab."""
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "results.json").write_text(json.dumps({"mode": "st", "split": "dev", "bleu": 1.0}))
    (ev / "delays.jsonl").write_text("{}\n")
    with pytest.raises(SateError, match=f"^--out {ev}: refusing to write a data directory into it: it is a `sate "
                                        "evaluate` run \\(it holds its results.json\\)"):
        check_output(ev, "data")
    (ev / "results.json").write_text("{}")  # a results.json of the user's own: no run
    assert check_output(ev, "data") == ev


def test_an_append_only_checkpoint_folder_is_refused_before_any_training(tmp_path: Path) -> None:
    """`sate train --exp EXP` with EXP/checkpoints append-only (`chattr +a`): an epoch was trained, then its save
    failed at the rename, naming a temporary file the folder kept for good (nineteenth hostile pass). An append-only
    logs/ is trained into: Lightning only adds a version folder there."""
    from sate.targets import check_run_folders  # train's own check of its folders, before any work

    exp = tmp_path / "exp"
    for name in ("checkpoints", "logs"):
        (exp / name).mkdir(parents=True)
    (exp / "config.yaml").write_text("task: mt\n")
    if subprocess.run(["chattr", "+a", str(exp / "checkpoints"), str(exp / "logs")],
                      capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        with pytest.raises(SateError, match=f"^--exp {exp}: {exp / 'checkpoints'} is append-only"):
            check_run_folders(exp)
        subprocess.run(["chattr", "-a", str(exp / "checkpoints")], check=True)
        check_run_folders(exp)
    finally:
        subprocess.run(["chattr", "-a", str(exp / "checkpoints"), str(exp / "logs")], check=True)


@pytest.mark.parametrize("attribute", ["+a", "+i"])
def test_an_old_checkpoint_fixed_in_place_is_refused_before_a_resume(tmp_path: Path, attribute: str) -> None:
    """`sate train --exp EXP` again with EXP/checkpoints/epoch000.ckpt (or a best one) append-only or immutable: the
    resumed epoch was trained and saved, then the removal of the old checkpoint (the run keeps its last and best N)
    failed, "Operation not permitted ... a special or protected file system", at every resume (twenty-first hostile
    pass). last.ckpt has its own check; a checkpoint moved out of the folder is the user's."""
    from sate.targets import check_run_folders  # train's own check of its files, before any work

    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "config.yaml").write_text("task: mt\n")
    for name in ("epoch000.ckpt", "best-valid_loss-epoch000.ckpt", "last.ckpt"):
        (exp / "checkpoints" / name).write_bytes(b"PK")
    old = exp / "checkpoints" / "best-valid_loss-epoch000.ckpt"
    if subprocess.run(["chattr", attribute, str(old)], capture_output=True).returncode != 0:
        pytest.skip("chattr needs root and a file system with attributes")
    how, lift = ("append-only (chattr +a)", "-a") if attribute == "+a" else ("immutable (chattr +i)", "-i")
    try:
        with pytest.raises(SateError) as caught:
            check_run_folders(exp)
        assert str(caught.value) == (
            f"--exp {exp}: {old} is {how}, and `sate train` removes an old checkpoint as it keeps its last and best N "
            f"(trainer.keep_last, trainer.keep_best); lift that (chattr {lift}), or move it out of the checkpoint "
            "folder")
        subprocess.run(["chattr", lift, str(old)], check=True)
        old.rename(tmp_path / old.name)
        subprocess.run(["chattr", attribute, str(tmp_path / old.name)], check=True)
        check_run_folders(exp)
    finally:
        for path in (old, tmp_path / old.name):
            if path.exists():
                subprocess.run(["chattr", lift, str(path)], check=True)


def test_an_append_only_pack_folder_or_config_snapshot_is_refused_before_any_work(tmp_path: Path) -> None:
    """`chattr +a` on a pack's folder (`pack --out PACK` again: the old pack is renamed aside, which such a folder
    refuses) and on EXP/config.yaml (`sate train` rewrites it at each run): each failed after Lightning's setup or
    the packing as "Operation not permitted (a special or protected file system)" (twentieth hostile pass)."""
    from sate.targets import check_run_folders  # train's own check of its folders, before any work

    pack, exp = tmp_path / "pack", tmp_path / "exp"
    pack.mkdir()
    (pack / "sate.yaml").write_text("task: st\n")
    exp.mkdir()
    (exp / "config.yaml").write_text("task: mt\n")
    if subprocess.run(["chattr", "+a", str(pack), str(exp / "config.yaml")], capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        with pytest.raises(SateError, match=f"^--out {pack}: refusing to replace it: it is append-only"):
            check_output(pack, "pack")
        with pytest.raises(SateError, match=f"^--exp {exp}: {exp / 'config.yaml'} is append-only \\(chattr \\+a\\), "
                                            "where the command renames its file config.yaml into place"):
            check_run_folders(exp)
    finally:
        subprocess.run(["chattr", "-a", str(pack), str(exp / "config.yaml")], check=True)


def test_a_log_folder_that_cannot_be_listed_is_refused_before_any_training(tmp_path: Path) -> None:
    """`sate train --exp EXP` resumed with EXP/tensorboard of mode 0300: Lightning found no version there, and the
    resume's events went into the first run's version_0, exit 0, beside logs/version_1 (twentieth hostile pass).
    Refused, naming it, for a user whom file modes bind."""
    from sate.targets import check_run_folders  # train's own check of its folders, before any work
    from tests.test_os_errors import as_a_user  # a child that file modes bind: root passes them

    exp = tmp_path / "exp"
    for name in ("checkpoints", "logs", "tensorboard"):
        (exp / name).mkdir(parents=True)
    for name in ("tensorboard", "logs"):
        (exp / name).chmod(0o300)
        try:
            status, err = as_a_user(lambda: check_run_folders(exp))
        finally:
            (exp / name).chmod(0o755)
        assert f"SateError: --exp {exp}: {exp / name} cannot be listed (no read permission), where Lightning " \
               "numbers this run's log folder" in err, err
    assert as_a_user(lambda: check_run_folders(exp)) == (0, "")


def test_a_voiced_corpuss_records_are_sate_synths(tmp_path: Path) -> None:
    """`translate --out CORPUS/en-de/synth.json` replaced `sate synth`'s record of the corpus with translation
    text, exit 0 (nineteenth hostile pass); its mark (.sate-synth) likewise, and (twentieth) a split's text, the
    references `sate prep` reads: `translate --out CORPUS/en-de/data/dev/txt/dev.de`, or `report --out` there. Nothing
    else writes into a voiced corpus either. A synth.json with no mark beside it is the user's text."""
    corpus = tmp_path / "en-de"
    (corpus / "data" / "dev" / "txt").mkdir(parents=True)
    (corpus / ".sate-synth").write_text("{}\n")
    (corpus / "synth.json").write_text("{}\n")
    (corpus / "data" / "dev" / "txt" / "dev.de").write_text("Guten Tag.\n")
    for name in ("synth.json", ".sate-synth", "data/dev/txt/dev.de", "data/dev/txt/new.txt"):
        with pytest.raises(SateError, match=f"{corpus} is a corpus `sate synth` voiced, which only `sate synth` "
                                            "writes$"):
            check_output(corpus / name, "text")
    for kind in ("directory", "data"):  # `evaluate --out`, `prep --out` into it
        with pytest.raises(SateError, match="is a corpus `sate synth` voiced"):
            check_output(corpus / "data", kind)  # type: ignore[arg-type]
    assert check_output(tmp_path, "corpus") == tmp_path  # `sate synth --out` again, to go on voicing it
    (corpus / ".sate-synth").unlink()
    assert check_output(corpus / "synth.json", "text") == corpus / "synth.json"


def test_an_output_among_a_corpus_files_is_refused(tmp_path: Path) -> None:
    """`translate --out KALDI/text` replaced the transcripts `sate prep --kaldi-dir` reads with a translation, exit
    0: text over text; a MuST-C split's text (`txt/dev.de`) and a LibriSpeech chapter's transcript likewise
    (twentieth hostile pass). The corpus's own folder is refused, not a folder below it: a project's root may hold
    a Kaldi wav.scp and text."""
    kaldi, txt, chapter = tmp_path / "kaldi", tmp_path / "en-de" / "data" / "dev" / "txt", tmp_path / "19" / "198"
    for folder in (kaldi, txt, txt.parent / "wav", chapter):
        folder.mkdir(parents=True)
    (kaldi / "wav.scp").write_text("r1 talk.wav\n")
    (kaldi / "text").write_text("r1 hello\n")
    (txt / "dev.yaml").write_text("- {duration: 1.0, offset: 0.0, speaker_id: s, wav: t.wav}\n")
    (txt / "dev.de").write_text("Hallo\n")
    (chapter / "19-198.trans.txt").write_text("19-198-0000 HELLO\n")
    for path, what in ((kaldi / "text", "a Kaldi data directory"), (kaldi / "new.txt", "a Kaldi data directory"),
                       (txt / "dev.de", "a MuST-C split's txt/ folder"), (txt.parent / "wav" / "x.txt", "a MuST-C"),
                       (chapter / "19-198.trans.txt", "a LibriSpeech chapter")):
        with pytest.raises(SateError, match=f"^--out {path}: {path.parent} is {re.escape(what)}.*, which sate reads "
                                            "and never writes$"):
            check_output(path, "text")
    with pytest.raises(SateError, match="is a Kaldi data directory"):
        check_output(kaldi, "directory")  # `evaluate --out KALDI`
    assert check_output(kaldi / "sub" / "t.txt", "text") == kaldi / "sub" / "t.txt"
    deep = tmp_path  # where a corpus's file names beside a folder run past PATH_MAX, none is there (no OSError)
    while len(str(deep)) < 3700:  # its own name fits, READER-CHAPTER.trans.txt beside it does not
        deep /= "d" * 200
    deep.mkdir(parents=True)
    assert check_output(deep / "ev", "directory") == deep / "ev"


def test_a_directory_output_into_a_data_directory_is_refused(tmp_path: Path, prepared_data: Path) -> None:
    """`analyze locality --out DATA` wrote its tables into the data directory, exit 0 (eighteenth hostile pass:
    every output aimed at DATA/); `evaluate --out DATA` was refused only for its delays.jsonl."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, ignore=shutil.ignore_patterns("fbank"))
    with pytest.raises(SateError, match=f"^--out {data}: refusing to write into it: it is a data directory"):
        check_output(data, "directory")
    (tmp_path / "mine").mkdir()
    assert check_output(tmp_path / "mine", "directory") == tmp_path / "mine"


@pytest.mark.slow
def test_evaluate_results_are_rewritten_by_evaluate_alone(tmp_path: Path, a_pack: Path, prepared_data: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`translate --out EV/results.json` replaced a run's scores with translation text, exit 0: text over text,
    which the rule allowed (found by the tenth hostile pass). `sate evaluate` still rewrites its own, and a
    results.json of anyone else's (not evaluate's object) stays text like any other."""
    out = tmp_path / "ev"
    argv = ["evaluate", "--model", str(a_pack), "--data", str(prepared_data), "--split", "dev", "--out", str(out)]
    assert main(argv) == 0
    assert main(argv) == 0  # its own results.json, replaced by the new run's
    capsys.readouterr()
    results = out / "results.json"
    before = results.read_text()
    assert json.loads(before)["split"] == "dev"
    sf.write(tmp_path / "talk.wav", np.zeros(16000, dtype=np.float32), 16000)
    for form in ("text", "jsonl"):
        assert main(["translate", "--model", str(a_pack), str(tmp_path / "talk.wav"), "--format", form,
                     "--out", str(results)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"--out {results}: refusing to replace it: it holds the scores of a `sate evaluate` "
                            "run, which only `sate evaluate` rewrites"), err
        assert results.read_text() == before
    mine = tmp_path / "results.json"
    mine.write_text("my own notes\n")
    assert check_output(mine, "text") == mine


def test_nothing_is_written_among_an_experiments_training_logs(tmp_path: Path) -> None:
    """`translate --out EXP/logs/version_0/metrics.csv` replaced the training log that `sate report --curves` draws
    and a resume cuts, with translation text, exit 0: text over text (eleventh hostile pass). A folder named logs
    beside a config.yaml of no experiment is anyone's."""
    exp = tmp_path / "exp"
    (exp / "logs" / "version_0").mkdir(parents=True)
    (exp / "logs" / "version_0" / "metrics.csv").write_text("epoch,step,train/loss\n0,0,1.5\n")
    (exp / "checkpoints").mkdir()
    (exp / "config.yaml").write_text("task: mt\n")
    for out, kind in ((exp / "logs" / "version_0" / "metrics.csv", "text"), (exp / "logs" / "new.txt", "text"),
                      (exp / "tensorboard" / "curves.png", "image")):
        with pytest.raises(SateError, match=f"{exp / out.relative_to(exp).parts[0]} holds an experiment's training "
                                            "logs, which only `sate train` writes"):
            check_output(out, kind)
    mine = tmp_path / "project"
    (mine / "logs").mkdir(parents=True)
    (mine / "config.yaml").write_text("anything: 1\n")
    assert check_output(mine / "logs" / "out.txt", "text") == mine / "logs" / "out.txt"


def test_an_empty_directory_option_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`--out "$OUT"` with OUT unset: `Path('')` is the current directory, into which `prep`, `evaluate`, `segment`,
    `synth` and `analyze locality` wrote their files, exit 0 (eleventh hostile pass)."""
    monkeypatch.chdir(tmp_path)
    for argv in (["prep", "--mustc-root", "corpus", "--out", ""], ["synth", "--out", ""],
                 ["evaluate", "--model", "p", "--data", "d", "--out", ""], ["segment", "talk.wav", "--out", ""],
                 ["analyze", "locality", "--model", "p", "--data", "d", "--out", ""],
                 ["pack", "--model", "m.pt", "--data", "d", "--out", ""], ["train", "--config", "c", "--exp", ""],
                 ["features", "--data", ""], ["vocab", "--data", ""]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            ": an empty name (an unset variable?); give a directory ('.' for the current one)"), argv
    assert list(tmp_path.iterdir()) == []


def test_an_empty_file_option_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`--out ""` of a command writing one file was "--out .: is a directory", naming a '.' nobody typed (thirteenth
    hostile pass); translate's --out too."""
    monkeypatch.chdir(tmp_path)
    for argv in (["average", "--exp", "e", "--last", "1", "--out", ""], ["report", "--exp", "e", "--out", ""]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            ": an empty name (an unset variable?); give the file's name"), argv
    assert main(["translate", "--model", "p", "talk.wav", "--out", ""]) == 2
    assert capsys.readouterr().err.strip() == ("sate translate: error: --out: an empty name (an unset variable?); give "
                                               "the output's name, or '-' for standard output")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_input_option_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`--exp "$EXP"` with EXP unset read the current directory (`Path('')`): `sate average` run in an experiment
    averaged it and wrote its model.pt there, exit 0; the others named a '.' nobody typed (".: is a directory",
    "spm_src.model: ... missing (run `sate vocab`)"; fourteenth hostile pass)."""
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    monkeypatch.chdir(exp)
    for argv in (["average", "--exp", "", "--last", "1"], ["pack", "--model", "m.pt", "--data", "", "--out", "p"],
                 ["pack", "--model", "", "--data", "d", "--out", "p"], ["translate", "--model", "p", ""],
                 ["translate", "--model", "", "talk.wav"], ["segment", ""], ["stream", "-", "--model", ""],
                 ["stream", "", "--model", "p"],
                 ["evaluate", "--model", "", "--data", "d"], ["evaluate", "--model", "p", "--data", ""],
                 ["evaluate", "--model", "p", "--mt-model", "", "--data", "d"], ["score", "--hyp", "", "--ref", "r"],
                 ["score", "--hyp", "h", "--ref", ""], ["latency-plot", "", "--out", "x.png"],
                 ["train", "--config", "", "--exp", "e"], ["train", "--config", "c", "--exp", "e", "--steps-from", ""],
                 ["config", "--config", ""], ["vocab", "--data", "d", "--marian", ""],
                 ["vocab", "--data", "d", "--mt-text", "", "de.txt"], ["prep", "--mustc-root", "", "--out", "d"],
                 ["prep", "--libri-trans", "", "--out", "d"], ["prep", "--librispeech", "", "--out", "d"],
                 ["prep", "--kaldi-dir", "", "--out", "d"], ["synth", "--out", "c", "--text", "ding", "--ding", ""],
                 ["report", "--exp", ""], ["analyze", "locality", "--model", "", "--data", "d", "--out", "o"],
                 ["analyze", "locality", "--model", "m", "--data", "", "--out", "o"],
                 ["analyze", "attention", "", "--model", "m", "--out", "a.png"],
                 ["analyze", "attention", "--model", "", "--out", "a.png"],
                 ["analyze", "attention", "--model", "m", "--data", "", "--utt", "u", "--out", "a.png"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            ": an empty name (an unset variable?); give its name ('.' for the current directory)"), argv
    assert [p.name for p in exp.iterdir()] == ["checkpoints"]


def test_an_output_named_as_the_journal_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`.sate-replacing` is where a set of files replaced together is listed while renamed (`files.replace_together`):
    `sate report --out EXP/.sate-replacing` wrote its table there and then removed it as the set's journal, exit 0,
    and `translate --out DATA/.sate-replacing` replaced the journal a killed `sate prep` left, so its half-renamed
    manifests were read again (seventeenth hostile pass)."""
    for kind in typing.get_args(Kind):  # a model or a folder of that name too (`average --out DATA/x.jsonl`)
        with pytest.raises(SateError, match=r"\.sate-replacing is the name of sate's journal"):
            check_output(tmp_path / "out" / ".sate-replacing", kind)  # type: ignore[arg-type]
    (tmp_path / "elsewhere").symlink_to(tmp_path / ".sate-replacing")  # where a link leads decides
    with pytest.raises(SateError, match=r"--curves .*elsewhere: \.sate-replacing is the name of sate's journal"):
        check_output(tmp_path / "elsewhere", "image", "--curves")
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / ".sate-replacing")]) == 2
    assert "--out" in capsys.readouterr().err and not os.path.lexists(tmp_path / ".sate-replacing")


def test_no_jsonl_is_written_into_a_data_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .jsonl in a data directory is read as a split's manifest: `segment --out DATA/` wrote DATA/talk.jsonl and
    `evaluate --stream --out DATA` DATA/delays.jsonl, exit 0, and every later `sate features --data DATA` stopped at
    that "split" (seventeenth hostile pass). A folder of segment files is no data directory."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.jsonl").write_text('{"id": "a", "audio": "a.wav", "offset": 0, "duration": 1}\n')  # prep's alone
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    for out in (f"{data}/", str(data / "new.jsonl")):
        assert main(["segment", str(wav), "--vad", "energy", "--out", out]) == 2
        err = capsys.readouterr().err  # the folder refused as a data directory itself (eighteenth pass)
        assert "is read as the manifest of a split" in err or "refusing to write into it: it is a data dir" in err
    for kind in typing.get_args(Kind):  # a model or a folder of that name too (`average --out DATA/x.jsonl`)
        with pytest.raises(SateError, match=r"--out .*delays\.jsonl: a \.jsonl in the data directory .* is read as "
                                            r"the manifest of a split \(delays\)"):
            check_output(data / "delays.jsonl", kind)  # type: ignore[arg-type]
    assert sorted(p.name for p in data.iterdir()) == ["dev.jsonl"]
    check_output(data / "notes.txt", "text")  # other text is written there as before
    segments = tmp_path / "segments"
    for _ in range(2):  # a folder of segment files, written again
        assert main(["segment", str(wav), "--vad", "energy", "--out", f"{segments}/"]) == 0
    assert [p.name for p in segments.iterdir()] == ["talk.jsonl"]


@pytest.mark.parametrize("kind", ["text", "model", "pack", "directory", "data", "experiment", "corpus"])
@pytest.mark.parametrize("name", ["~/out", "~bob/out", "~"])
def test_an_output_under_a_tilde_the_shell_left_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          kind: Kind, name: str) -> None:
    """`--out=~/talk.txt` or `EXP="~/exp"` (the shell expands '~' at a word's start only): every command made a
    folder named '~' in the current directory and wrote there, exit 0 (twenty-first hostile pass). A folder named
    '~' that is there is written into, as named."""
    monkeypatch.chdir(tmp_path)
    first = name.split("/")[0]
    with pytest.raises(SateError) as caught:
        check_output(Path(name), kind)
    assert str(caught.value).startswith(f"--out {name}: a '~' here is not your home folder")
    assert f"no folder {first} is in {tmp_path}" in str(caught.value)
    assert os.listdir(tmp_path) == []
    (tmp_path / first).mkdir()
    if name != first:
        assert check_output(Path(name), kind) == tmp_path / name


def test_a_tilde_folder_written_out_as_dot_slash_is_written_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`--out ./~/t.txt` names a folder '~' here in the one spelling no shell expands, but `Path` dropped the './'
    and it was refused as a '~' the shell left, with "write the path out" (twenty-second hostile pass, left; fixed
    in the twenty-third). Each kind of output option (a file, a directory, translate's and segment's own)."""
    from sate.targets import dir_name, file_name, typed_path

    monkeypatch.chdir(tmp_path)
    for typed, name in ((file_name, "~/t.txt"), (dir_name, "~/out/"), (typed_path, "~/s.jsonl")):
        assert typed(f"./{name}") == tmp_path / name
        assert typed(name) == Path(name)  # as typed: check_output says what is wrong with it
    wav = tmp_path / "talk.wav"
    sf.write(wav, 0.3 * np.sin(np.linspace(0, 2000, 16000)).astype(np.float32), 16000)
    assert main(["segment", str(wav), "--vad", "energy", "--out", "~/s.jsonl"]) == 2
    assert "a '~' here is not your home folder" in capsys.readouterr().err
    assert main(["segment", str(wav), "--vad", "energy", "--out", "./~/s.jsonl"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "~/s.jsonl").read_text().splitlines()[0])["file"] == str(wav)


@pytest.mark.parametrize(("argv", "name"), [
    (["pack", "--model", "m.pt", "--data", "data", "--out"], "st.zip"),
    (["pack", "--model", "m.pt", "--data", "data", "--out"], "model.pt"),
    (["pack", "--model", "m.pt", "--data", "data", "--out"], "pk."),
    (["evaluate", "--model", "pack", "--data", "data", "--out"], "results.json"),
    (["analyze", "locality", "--model", "m.pt", "--data", "data", "--out"], "loc.png"),
    (["prep", "--mustc-root", "corpus", "--out"], "data.tar"),
    (["train", "--config", "st.yaml", "--exp"], "exp.yaml"),
    (["synth", "--out"], "corpus.tar.gz"),
    (["fetch-whisper", "--cache"], "cache.json"),
])
def test_a_new_folder_named_like_a_file_is_refused_by_every_command_that_makes_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str],
        name: str) -> None:
    """`sate analyze locality --out loc.png`, `pack --out st.zip`, `evaluate --out results.json`, `prep --out
    data.tar`, `train --exp exp.yaml` made a folder of that name, exit 0 (twenty-second hostile pass): the rule
    `segment` and `translate` had, for every directory option. A trailing '/' names a folder of any name, and one
    there is written into as named."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([*argv, name])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {argv[-1]}: {name}: a directory goes here, and none is there by this name, which ends " \
        in err, err
    assert err.rstrip().endswith(f"end it with a slash for a directory of that name: {name}/"), err
    assert os.listdir(tmp_path) == []
    assert dir_name(f"{name}/") == Path(name)
    (tmp_path / name).mkdir()
    assert dir_name(name) == Path(name)


@pytest.mark.parametrize(("name", "says"), [
    ("talk.vtt", "a .vtt name says WebVTT subtitles, but W: name it {d}/talk.srt"),
    ("talk.json", "a .json name says one JSON document, but W: name it {d}/talk.srt"),
    ("talk.srt.gz", "a .gz name says a compressed file, but W, uncompressed: name it {d}/talk.srt and compress it "
                    "after"),
    ("talk.tar", "a .tar name says an archive, but W, uncompressed: name it {d}/talk.srt, and archive it after"),
    ("t.PNG", "a .png name says an image, but W: name it {d}/t.srt"),
    ("talk.srt ", "the name ends in a space (a quoting slip?); give it without"),
    ("talk.srt.", "the name ends in a dot (a quoting slip?); give it without"),
])
def test_an_output_named_for_another_kind_is_refused(tmp_path: Path, name: str, says: str) -> None:
    """What a file's name says it holds decides (`check_named_kind`): `translate --out talk.vtt` wrote text lines,
    `average --out avg.json` a model, `report --out table.csv` markdown, exit 0 (twenty-second hostile pass). A
    name of no kind sate knows, and one that is there, are taken as named."""
    path = tmp_path / name
    with pytest.raises(SateError) as caught:
        check_named_kind(path, "W", (".srt", ".txt"))
    shown = f"'{path}'" if name.endswith(" ") else str(path)
    assert str(caught.value) == f"--out {shown}: {says.format(d=tmp_path)}"
    for fine in ("talk.srt", "talk.SRT", "talk.txt", "talk", "talk.2024-01-01", "talk.bin"):
        check_named_kind(tmp_path / fine, "W", (".srt", ".txt"))
    check_named_kind(Path("/dev/stdout"), "W", (".srt",))
    (tmp_path / "there.").write_text("")
    check_named_kind(tmp_path / "there.", "W", (".srt", ".txt"))
    (tmp_path / "notes.json").write_text("{}")  # a link is written through: its target's name says what it holds
    (tmp_path / "latest.txt").symlink_to("notes.json")
    with pytest.raises(SateError) as caught:
        check_named_kind(tmp_path / "latest.txt", "W", (".srt", ".txt"))
    assert str(caught.value) == (f"--out {tmp_path / 'latest.txt'} (leading to {tmp_path / 'notes.json'}): a .json "
                                 "name says one JSON document, but W: write elsewhere, or remove the link")
