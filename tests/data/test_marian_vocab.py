"""Marian's tokenisation (MarianVocab) equals MarianTokenizer's; `sate vocab --marian` and the CTC subset."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import sentencepiece as spm

from sate.cli import main
from sate.data.manifest import read_manifest
from sate.data.marian_vocab import CTC_TOKENS, MarianVocab, marian_pieces, marian_text
from sate.data.tokens import BLANK, UNK
from sate.data.vocab import Vocabulary, load_vocabularies, vocabulary_kind
from sate.errors import SateError

transformers = pytest.importorskip("transformers")

ODD = ["  Two   spaces and a tab\tinside. ", "Zürich? Ça va! 42 × 7 ≈ 300…", "(Applause) Thank you.", ""]


@pytest.fixture(scope="module")
def tokenizer(marian_dir: Path) -> object:
    return transformers.MarianTokenizer(source_spm=str(marian_dir / "source.spm"),
                                        target_spm=str(marian_dir / "target.spm"), vocab=str(marian_dir / "vocab.json"))


def test_source_ids_equal_marian_tokenizer(marian_dir: Path, tokenizer: object,
                                           marian_sentences: tuple[list[str], list[str]]) -> None:
    source = MarianVocab(marian_dir, "source")
    texts = marian_sentences[0] + ODD
    want = [tokenizer(t)["input_ids"] for t in texts]
    assert [source.encode(t) for t in texts] == want
    assert [list(ids) for ids in source.encode_many(texts)] == want
    assert all(ids[-1] == source.eos_id == 0 for ids in want)
    assert any(source.unk_id in ids for ids in want)  # "×", "≈" are not in the tiny vocabulary


def test_target_ids_and_detokenisation_equal_marian_tokenizer(marian_dir: Path, tokenizer: object,
                                                              marian_sentences: tuple[list[str], list[str]]) -> None:
    target = MarianVocab(marian_dir, "target")
    for text in marian_sentences[1] + ODD:
        labels = tokenizer(text_target=text)["input_ids"]
        assert target.encode(text) + [target.eos_id] == labels  # teacher forcing appends </s>
        assert target.decode(labels) == tokenizer.decode(labels, skip_special_tokens=True)
        with_pad = labels + [target.pad_id, target.pad_id]
        assert target.decode(with_pad) == tokenizer.decode(with_pad, skip_special_tokens=True)


def test_marian_text_keeps_case_and_punctuation_and_drops_sound_tags() -> None:
    assert marian_text(" (Laughter) Well, it's  2 p.m. [music] Now! ") == "Well, it's 2 p.m. Now!"


@pytest.fixture
def marian_data(tmp_path: Path, prepared_data: Path, marian_dir: Path) -> Path:
    """A copy of the prepared fixture data (manifests and SentencePiece vocabularies) with the Marian vocabulary."""
    data = tmp_path / "data"
    data.mkdir()
    for path in prepared_data.iterdir():
        if path.is_file():
            shutil.copy(path, data / path.name)
    assert main(["vocab", "--data", str(data), "--marian", str(marian_dir)]) == 0
    return data


def test_vocab_marian_writes_the_ctc_subset_of_the_train_transcripts(marian_data: Path, marian_dir: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.loads(line) for line in (marian_data / "train.jsonl").read_text().splitlines()]
    source = MarianVocab(marian_dir, "source")
    seen = {p for row in rows for p in source.sp.encode(marian_text(row["src"]), out_type=str)}
    tokens = (marian_data / "marian" / CTC_TOKENS).read_text(encoding="utf-8").splitlines()
    assert tokens[:2] == [BLANK, UNK] and set(tokens[2:]) == seen - {UNK}
    assert [source.ids[t] for t in tokens[2:]] == sorted(source.ids[t] for t in tokens[2:])  # Marian id order
    assert len(tokens) < len(source.tokens)
    assert vocabulary_kind(marian_data) == "marian"
    ctc, target = load_vocabularies(marian_data, "st")
    assert ctc.tokens == tokens and target.tokens == source.tokens
    ids = ctc.encode(marian_text(rows[0]["src"]))
    assert BLANK not in ids and ctc.decode(ids) == marian_text(rows[0]["src"]).strip()
    # A piece that no train transcript has becomes the subset's <unk>, and <unk> decodes to nothing.
    assert ctc.encode("a ×")[-1] == ctc.tokens.index(UNK) and ctc.decode(ctc.encode("a ×")) == "a"
    mt_src, _ = load_vocabularies(marian_data, "mt")
    assert mt_src.tokens == source.tokens
    assert main(["vocab", "--data", str(marian_data), "--marian", str(marian_dir)]) == 0
    assert "up to date" in capsys.readouterr().out
    ctc_tokens = marian_data / "marian" / CTC_TOKENS  # edited since: written again (thirteenth hostile pass)
    ctc_tokens.write_text(ctc_tokens.read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
    assert main(["vocab", "--data", str(marian_data), "--marian", str(marian_dir)]) == 0
    assert "up to date" not in capsys.readouterr().out and ctc_tokens.read_text(encoding="utf-8").splitlines() == tokens


def test_the_lines_of_vocab_marian_escape_a_names_control_characters(marian_data: Path, marian_dir: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Fourteenth hostile pass: "marian: HUB -> DATA/marian; ..." and "DATA: the Marian vocabulary is up to date"
    # showed the names as they are: a line break split the line, an escape reached the terminal.
    capsys.readouterr()
    hub = shutil.copytree(marian_dir, marian_data.parent / "opus\nmt\x1b[2J")
    named = marian_data.rename(marian_data.with_name("d\nx\x1b[2J"))
    for _ in range(2):
        assert main(["vocab", "--data", str(named), "--marian", str(hub)]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and len(out.strip().splitlines()) == 1, out
    assert out.strip() == f"{named.parent}/d\\nx\\x1b[2J: the Marian vocabulary is up to date"


def test_vocab_switches_back_to_sentencepiece(marian_data: Path) -> None:
    assert main(["vocab", "--data", str(marian_data), "--src-size", "48", "--tgt-size", "64"]) == 0
    assert vocabulary_kind(marian_data) == "spm"
    assert isinstance(load_vocabularies(marian_data, "st")[0], Vocabulary)
    assert (marian_data / "marian" / CTC_TOKENS).is_file()  # nothing the user made is removed


def test_a_hugging_face_cache_folder_names_its_snapshot(tmp_path: Path, marian_data: Path, marian_dir: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`--marian ~/.cache/huggingface/hub/models--Helsinki-NLP--opus-mt-en-de`, the model's folder in the cache, was
    "source.spm is missing" alone: the files are a level down, in a snapshot (30th hostile pass), as Whisper's are
    named. The snapshot named works."""
    cache = tmp_path / "hub" / "models--Helsinki-NLP--opus-mt-en-de"
    snapshot = shutil.copytree(marian_dir, cache / "snapshots" / "0a1b2c")
    assert main(["vocab", "--data", str(marian_data), "--marian", str(cache)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"source.spm is missing (a Marian directory holds source.spm, "
                                                    f"target.spm, vocab.json); a Hugging Face cache folder: name its "
                                                    f"snapshot ({snapshot})")
    assert main(["vocab", "--data", str(marian_data), "--marian", str(snapshot)]) == 0


def test_vocab_marian_errors(tmp_path: Path, marian_data: Path, marian_dir: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vocab", "--data", str(marian_data), "--marian", str(marian_dir), "--src-size", "10"]) == 2
    assert "do not apply" in capsys.readouterr().err
    broken = tmp_path / "broken"
    shutil.copytree(marian_dir, broken)
    (broken / "target.spm").unlink()
    assert main(["vocab", "--data", str(marian_data), "--marian", str(broken)]) == 2
    assert "target.spm is missing" in capsys.readouterr().err
    # the refused directory left the data directory's vocabulary as it was: still usable
    assert vocabulary_kind(marian_data) == "marian" and load_vocabularies(marian_data, "st")[0].tokens
    (broken / "target.spm").write_text("not a model\n")  # was copied into the data directory, exit 0
    before = (marian_data / "marian" / "target.spm").read_bytes()
    assert main(["vocab", "--data", str(marian_data), "--marian", str(broken)]) == 2
    assert f"{broken}/target.spm: not a readable SentencePiece model" in capsys.readouterr().err
    assert (marian_data / "marian" / "target.spm").read_bytes() == before
    for name in ("source.spm", "target.spm"):  # an empty one was a model of no pieces: copied, exit 0, and a pack's
        shutil.copy(marian_dir / name, broken / name)  # translated every sentence into nothing (fourteenth pass)
    (broken / "source.spm").write_bytes(b"")
    assert main(["vocab", "--data", str(marian_data), "--marian", str(broken)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate vocab: error: {broken}/source.spm: the file is empty (0 bytes), "
                                               "not a SentencePiece model; write it again with the command that made "
                                               "it (`sate vocab`, `sate pack`, or a fresh download)")
    assert (marian_data / "marian" / "source.spm").read_bytes() == (marian_dir / "source.spm").read_bytes()
    # twenty-second hostile pass: another model's SentencePiece model as source.spm (a data directory's) was taken,
    # exit 0, and each piece it cut looked up as <unk>
    shutil.copy(marian_data / "spm_src.model", broken / "source.spm")
    assert main(["vocab", "--data", str(marian_data), "--marian", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sate vocab: error: {broken}/source.spm: ") and len(err.splitlines()) == 1
    assert f"pieces are not in {broken}/vocab.json" in err and "another model, not this Marian model's" in err
    shutil.copy(marian_dir / "source.spm", broken / "source.spm")
    vocab = json.loads((broken / "vocab.json").read_text())
    vocab["extra"] = len(vocab) + 3
    (broken / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(SateError, match="ids are not"):
        marian_pieces(broken)


def test_vocab_marian_on_a_full_disk_leaves_the_old_vocabulary(tmp_path: Path, prepared_data: Path, marian_dir: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 full_disk: Callable[..., None]) -> None:
    """Switching a data directory to a Marian vocabulary removed its vocab.json first and copied Marian's files one
    by one: a full disk left neither vocabulary usable. Now the SentencePiece one stays, with its record."""
    data = tmp_path / "data"
    data.mkdir()
    for path in prepared_data.glob("*"):
        if path.is_file():
            shutil.copy(path, data / path.name)
    before = {p.name: p.read_bytes() for p in data.iterdir()}

    full_disk(monkeypatch)
    assert main(["vocab", "--data", str(data), "--marian", str(marian_dir)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in data.iterdir() if p.is_file()} == before
    assert not (data / "marian").exists() or not list((data / "marian").iterdir())  # no temporary file left
    assert vocabulary_kind(data) == "spm" and load_vocabularies(data, "st")[0].tokens


def _data_and_a_french_model(tmp_path: Path, prepared_data: Path, marian_dir: Path) -> tuple[Path, Path]:
    """A copy of the data directory's files, and a copy of the Marian model named as opus-mt-en-fr."""
    data = tmp_path / "data"
    data.mkdir()
    for path in prepared_data.iterdir():
        if path.is_file():
            shutil.copy(path, data / path.name)
    french = tmp_path / "opus-mt-en-fr"
    shutil.copytree(marian_dir, french)
    return data, french


def test_an_mt_pack_refuses_a_damaged_ctc_token_list(tmp_path: Path, marian_data: Path, marian_dir: Path) -> None:
    """An MT model reads no CTC token list, but its pack holds DATA/marian/ctc_tokens.txt: one cut short or holding
    bytes that are no text was copied into the pack, exit 0 (fourteenth hostile pass). Checked as its readers do."""
    from sate.decode.pack import pack
    from sate.models import build_model, save_model_file

    src, tgt = load_vocabularies(marian_data, "mt")
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                               "decoder": {"type": "hf_marian"}}, len(src), len(tgt))
    save_model_file(tmp_path / "mt.pt", model, src.tokens, tgt.tokens)
    ctc = marian_data / "marian" / CTC_TOKENS
    ctc.write_text(ctc.read_text()[:4])  # "<bla": cut short
    with pytest.raises(SateError, match=rf"^{ctc}: must be {BLANK}, {UNK}, then Marian pieces"):
        pack(tmp_path / "mt.pt", marian_data, tmp_path / "pack")
    assert not (tmp_path / "pack").exists()


def test_a_marian_model_of_another_target_language_is_said(tmp_path: Path, prepared_data: Path, marian_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`sate vocab --marian opus-mt-en-fr` over an En-De data directory took the French model's vocabularies, exit 0,
    without a word (24th hostile pass): a note names both (a talk linked to another pair's copy makes the audio's
    folders say another language, so the work goes on). The en-de model, also where the hub cache names it in a
    folder above a snapshot, says nothing."""
    data, french = _data_and_a_french_model(tmp_path, prepared_data, marian_dir)
    shutil.copy(french / "source.spm", french / "target.spm")  # one tokeniser on both sides: the words cannot tell
    assert main(["vocab", "--data", str(data), "--marian", str(french)]) == 0
    pair = Path(read_manifest(data / "train.jsonl")[0]["audio"]).parents[3]
    assert capsys.readouterr().err.strip() == (
        f"note: --marian {french}: an English-to-fr model by its name, and {data / 'train.jsonl'} is en-de (by its "
        f"audio's folder {pair}): if its translations are de, give the opus-mt-en-de model")
    german = tmp_path / "hub" / "models--Helsinki-NLP--opus-mt-en-de" / "snapshots" / "0123abc"
    shutil.copytree(marian_dir, german)
    assert main(["vocab", "--data", str(data), "--marian", str(german)]) == 0
    assert "note:" not in capsys.readouterr().err


# French sentences for a French target.spm (the fixture's is German)
FRENCH = ["le chat est assis sur le tapis depuis ce matin", "ou est la gare centrale de cette ville",
          "nous voulons acheter du pain frais pour notre petit voyage", "il fait beau aujourd'hui mais demain il pleut",
          "les enfants jouent dans le jardin avec leurs amis", "je voudrais une tasse de cafe sans sucre, merci",
          "cette maison est trop grande pour une seule famille", "pourquoi est-ce que tu arrives toujours en retard",
          "la voiture rouge appartient a mon voisin", "elle a lu trois livres pendant les vacances d'ete",
          "nous avons besoin de plus de temps pour finir ce travail", "le musee ferme ses portes a six heures",
          "mon frere habite a Lyon depuis deux ans", "les prix ont beaucoup augmente cette annee",
          "il faut boire de l'eau quand il fait chaud", "le professeur explique la lecon aux eleves"]


def _spm_model(sentences: list[str], size: int) -> bytes:
    """A unigram model as the fixture's Marian tokenisers are trained."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=out, vocab_size=size,
                                   model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
                                   minloglevel=2)
    return out.getvalue()


def test_a_marian_model_of_another_language_by_its_words_is_refused(tmp_path: Path, prepared_data: Path,
                                                                   marian_dir: Path, run_sate) -> None:
    """A plain En-De data directory under `--marian opus-mt-en-fr` whose target.spm is French exited 0 with a note
    while it cut the German references into French pieces (fix24d): where target.spm cuts the translations into
    about as many pieces a word as the English source.spm, refused. The German model named en-fr (the words say the
    translations are its language) passes; one whose tokenisers are one model cannot tell: a note."""
    data, french = _data_and_a_french_model(tmp_path, prepared_data, marian_dir)
    (french / "target.spm").write_bytes(_spm_model(FRENCH * 4, 120))
    pieces = json.loads((french / "vocab.json").read_text(encoding="utf-8"))  # French pieces in the joint vocabulary
    target = spm.SentencePieceProcessor(model_file=str(french / "target.spm"))
    pad = pieces.pop("<pad>")
    for i in range(target.get_piece_size()):
        pieces.setdefault(target.id_to_piece(i), len(pieces))
    pieces["<pad>"] = len(pieces) if pad < len(pieces) else pad
    (french / "vocab.json").write_text(json.dumps(pieces, ensure_ascii=False), encoding="utf-8")
    config = json.loads((french / "config.json").read_text(encoding="utf-8"))
    config.update(vocab_size=len(pieces), pad_token_id=pieces["<pad>"], decoder_start_token_id=pieces["<pad>"])
    (french / "config.json").write_text(json.dumps(config), encoding="utf-8")
    rc, _, err = run_sate("vocab", "--data", data, "--marian", french)
    assert rc == 2 and "its target.spm cuts the translations into about as many pieces a word" in err, err
    assert "give the opus-mt-en-de model" in err and not (data / "marian").exists()
    named = tmp_path / "named" / "opus-mt-en-fr"
    shutil.copytree(marian_dir, named)
    rc, _, err = run_sate("vocab", "--data", data, "--marian", named)
    assert rc == 0 and "note:" not in err, err
    shutil.copy(named / "source.spm", named / "target.spm")  # one model on both sides (pieces in vocab.json)
    rc, _, err = run_sate("vocab", "--data", data, "--marian", named)
    assert rc == 0 and err.startswith(f"note: --marian {named}: an English-to-fr model by its name"), err
    # a language compared nowhere else (-fi) is still one, and the innermost folder names the model: one above it
    # (`opus-mt-en-all/...`) named the model given (24th hostile pass, reviews)
    finnish = tmp_path / "opus-mt-en-all" / "opus-mt-en-fi"
    shutil.copytree(named, finnish)
    rc, _, err = run_sate("vocab", "--data", data, "--marian", finnish)
    assert rc == 0 and err.startswith(f"note: --marian {finnish}: an English-to-fi model by its name"), err
    # a model of several languages inside a folder that names one (review24i): its own name decides, and it names none
    several = tmp_path / "opus-mt-en-fr" / "opus-mt-en-mul"
    shutil.copytree(named, several)
    rc, _, err = run_sate("vocab", "--data", data, "--marian", several)
    assert rc == 0 and "English-to-fr" not in err and "note:" not in err, err
