"""Every YAML sate reads has its aliases bounded: a few hundred bytes of aliases nested in aliases ("billion laughs")
are one short line in a second, never a hang; values in messages are shortened."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import torch

from sate.cli import main
from sate.config import MAX_YAML_BYTES, bounded, load_yaml_text
from sate.data.mustc import parse_yaml_line
from sate.decode.pack import read_pack_yaml
from sate.errors import SateError, shown
from sate.models.pretrained import read_espnet


def bomb(levels: int = 9, key: str = "x") -> str:
    """``a: &a [x, ...]`` then each level nine aliases of the one before: 9**levels values from ~300 bytes."""
    names = "abcdefghijklmnop"
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * 9)}]"]
    for k in range(1, levels):
        lines.append(f"{names[k]}: &{names[k]} [{', '.join(['*' + names[k - 1]] * 9)}]")
    lines.append(f"{key}: *{names[levels - 1]}")
    return "\n".join(lines) + "\n"


class Quick:
    """Asserts that its block ends within `seconds` (a hang would end the suite's patience instead). The bounds are
    generous (idle: well under a second) so that a loaded machine does not fail them; a bomb expands for hours."""

    def __init__(self, seconds: float = 30.0) -> None:
        self.seconds = seconds

    def __enter__(self) -> Quick:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        assert time.perf_counter() - self.start < self.seconds


def one_short_line(err: str) -> None:
    assert len(err.strip().splitlines()) == 1 and len(err) < 400, err[:1000]


@pytest.mark.slow
def test_bounded_counts_expanded_values_and_levels() -> None:
    assert bounded({"a": [1, 2, {"b": "c"}]}, "x") == {"a": [1, 2, {"b": "c"}]}
    with Quick(), pytest.raises(SateError, match=r"cfg: more than 200000 values once its aliases are expanded"):
        load_yaml_text(bomb(), "cfg")
    with pytest.raises(SateError, match=r"cfg: more than 64 levels"):
        load_yaml_text("a: &a [*a]\n", "cfg")  # a list holding itself
    with Quick(60), pytest.raises(SateError, match="nested too deeply|more than 64 levels"):
        load_yaml_text("[" * 5000 + "]" * 5000, "cfg")
    anchors = "d: &d 256\nmodel: {d_model: *d, ffn: *d}\n"  # anchors as researchers use them still work
    assert load_yaml_text(anchors) == {"d": 256, "model": {"d_model": 256, "ffn": 256}}


def test_a_training_config_bomb_is_refused_by_config_and_train(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "st.yaml"
    config.write_text("task: st\n" + bomb(key="optim"))
    for argv in (["config", "--config", str(config)], ["train", "--config", str(config), "--exp", str(tmp_path / "e")]):
        with Quick():
            assert main(argv) == 2
        err = capsys.readouterr().err
        one_short_line(err)
        assert "once its aliases are expanded" in err


def test_a_config_larger_than_any_config_is_refused_before_it_is_read(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A YAML file had no size cap: a 10-GB file named as a config was read whole into memory first."""
    config = tmp_path / "st.yaml"
    config.write_text("task: st\n")
    with open(config, "r+b") as f:
        f.truncate(MAX_YAML_BYTES + 1)  # sparse: no disk used
    for argv in (["config", "--config", str(config)], ["train", "--config", str(config), "--exp", str(tmp_path / "e")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        one_short_line(err)
        assert f"{config}: {MAX_YAML_BYTES + 1:,} bytes, more than any config" in err


def flow_bomb(levels: int = 7) -> str:
    """The same on one line, as a `--set` value: ``[&a0 [lol, ...], &a1 [*a0, ...], ..., [*aN, ...]]`` (the last
    level has no anchor: an anchor nothing uses is refused as such)."""
    parts = ["&a0 [" + ", ".join(["lol"] * 9) + "]"]
    parts += [("[" if k == levels - 1 else f"&a{k} [") + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def test_set_values_are_bounded_and_shown_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mt.yaml"
    config.write_text("task: mt\n")
    with Quick():
        assert main(["config", "--config", str(config), "--set", f"optim.lr={flow_bomb()}"]) == 2
    err = capsys.readouterr().err
    one_short_line(err)
    assert "once its aliases are expanded" in err
    assert main(["config", "--config", str(config), "--set", f"optim.lr={flow_bomb(levels=4)}"]) == 2
    err = capsys.readouterr().err
    one_short_line(err)  # 6561 values, within the bound, where a number goes: a few of them are shown
    assert "optim.lr must be" in err and "..." in err


def test_a_shared_packs_sate_yaml_cannot_hang_translate(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: st\n" + bomb(key="decode"))
    with Quick(), pytest.raises(SateError, match=r"sate.yaml: more than 200000 values"):
        read_pack_yaml(pack)
    (pack / "sate.yaml").write_text("format: " + "x" * 100_000 + "\nversion: 1\n")
    with pytest.raises(SateError) as err:
        read_pack_yaml(pack)
    assert len(str(err.value)) < len(str(pack)) + 150


def test_a_mustc_yaml_line_bomb_is_refused_naming_the_line() -> None:
    line = ("- {a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol], b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b], d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c], "
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d], f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e], "
            "duration: *f, offset: 0, speaker_id: s, wav: 'x.wav'}")
    with Quick(), pytest.raises(SateError, match=r"^tst.yaml:3: more than 200000 values"):
        parse_yaml_line(line, Path("tst.yaml"), 3)
    with pytest.raises(SateError) as err:
        parse_yaml_line("- {duration: 1, offset: 0, speaker_id: " + "s" * 50_000 + "}", Path("tst.yaml"), 4)
    assert str(err.value).startswith("tst.yaml:4: yaml entry misses field(s) wav") and len(str(err.value)) < 200


def test_an_espnet_config_bomb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(bomb(key="token_list"))
    with Quick(), pytest.raises(SateError, match=r"config.yaml: more than 200000 values"):
        read_espnet(tmp_path / "model.pth", {"w": torch.zeros(1)}, None)


def test_shown_never_builds_the_whole_repr() -> None:
    value = load_yaml_text(bomb(levels=5))  # 59049 values: within the bound
    assert len(shown(value)) <= 80 and len(shown("x" * 10**6)) <= 80
    with Quick(1):
        for _ in range(100):
            shown(value)


def test_a_key_given_twice_is_refused_in_every_yaml_the_tool_reads(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """YAML keeps the last of a repeated key without a word: a second `trainer:` replaced the first section whole,
    a second `beam:` in a pack's sate.yaml the first. A merge key's defaults may still be overridden."""
    config = tmp_path / "twice.yaml"
    config.write_text("task: asr\ntrainer: {max_epochs: 3}\noptim: {lr: 0.001}\ntrainer: {patience: 2}\n")
    assert main(["config", "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate config: error: {config} line 4: invalid YAML (the key 'trainer' "
                                               "is given twice (lines 2 and 4); YAML would keep the last without a "
                                               "word)")
    (tmp_path / "ok.yaml").write_text("task: asr\n")
    assert main(["config", "--config", str(tmp_path / "ok.yaml"), "--set", "trainer={max_epochs: 1, max_epochs: 2}"]) \
        == 2
    assert "the value is not valid YAML (the key 'max_epochs' is given twice" in capsys.readouterr().err
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: mt\ndecode: {beam: 5, beam: 50}\n")
    with pytest.raises(SateError, match=r"sate.yaml line 4: invalid YAML \(the key 'beam' is given twice"):
        read_pack_yaml(pack)
    merged = load_yaml_text("base: &b {lr: 1, warmup: 2}\noptim: {<<: *b, lr: 3}\n")
    assert merged == {"base": {"lr": 1, "warmup": 2}, "optim": {"lr": 3, "warmup": 2}}


def test_an_anchor_given_twice_or_a_second_document_is_said_whole(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """PyYAML's problem alone is half of what it says: an anchor given twice (a section copied with its anchor) was
    "invalid YAML (second occurrence)", a second document "(but found another document)" (twentieth hostile pass)."""
    config = tmp_path / "twice.yaml"
    config.write_text("task: asr\noptim: {lr: &v 0.001}\ntrainer: {patience: &v 2}\n")
    assert main(["config", "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate config: error: {config} line 3: invalid YAML (found duplicate "
                                               "anchor 'v' (first at line 2))")
    config.write_text("task: asr\n---\ntask: st\n")
    assert main(["config", "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (f"sate config: error: {config} line 2: invalid YAML (expected a single "
                                               "document in the stream, but found another document)")
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: mt\ndecode: {beam: &b 5, nbest: &b 1}\n")
    with pytest.raises(SateError, match=r"sate.yaml line 4: invalid YAML \(found duplicate anchor 'b' \(first at "):
        read_pack_yaml(pack)


def test_a_config_is_read_from_a_pipe_and_a_directory_or_device_is_named(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`sate train --config <(sed ... base.yaml)` (a pipe: st_size 0) was "config file not found", and so were a
    directory and /dev/zero; a pipe is now read, bounded as a file is (an endless one stops at MAX_YAML_BYTES)."""
    fifo = tmp_path / "piped.yaml"
    os.mkfifo(fifo)

    def feed(data: bytes) -> threading.Thread:
        def write() -> None:
            with open(fifo, "wb") as f:
                try:
                    while data:
                        f.write(data)
                        if len(data) < 1024:  # a config: once; a block: until the reader stops
                            break
                except BrokenPipeError:
                    pass
        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        return thread

    writer = feed(b"task: mt\nseed: 7\n")
    assert main(["config", "--config", str(fifo), "--get", "seed"]) == 0
    writer.join(10)
    assert capsys.readouterr().out == "7\n"
    writer = feed(b"a: 1\n" * 4096)  # endless
    with Quick():
        assert main(["config", "--config", str(fifo)]) == 2
    writer.join(10)
    assert f"{fifo}: {MAX_YAML_BYTES + 1:,} bytes, more than any config" in capsys.readouterr().err
    for path, says in ((tmp_path, "is a directory, not a config file"),
                       (Path("/dev/zero"), "is a device or socket, not a config file"),
                       (tmp_path / "gone.yaml", "config file not found")):
        assert main(["config", "--config", str(path)]) == 2
        err = capsys.readouterr().err
        one_short_line(err)
        assert err.strip() == f"sate config: error: {path}: {says}"


@pytest.mark.parametrize("encoding", ["UTF-16", "UTF-16LE", "UTF-16BE", "UTF-32", "UTF-32LE", "UTF-32BE"])
def test_a_config_in_utf16_is_named_with_how_to_convert_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           encoding: str) -> None:
    """A config saved by Notepad as "Unicode" (UTF-16 with a byte-order mark) was "not UTF-8 text (byte 0)", and one
    without the mark (PowerShell's `Out-File -Encoding unicode` of another tool) "invalid YAML (character #x0000 at
    offset 1 ...)", where a text file sate reads is named as UTF-16 with iconv's advice; followed, it reads
    (twenty-seventh hostile pass). A pack's sate.yaml is read the same way."""
    config = tmp_path / "asr.yaml"
    config.write_bytes("task: asr\nseed: 7\n".encode(encoding.lower().replace("utf-", "utf_")))
    assert main(["config", "--config", str(config), "--get", "seed"]) == 2
    assert capsys.readouterr().err.strip() == (f"sate config: error: {config}: {encoding} text, not UTF-8: convert it "
                                               f"first (iconv -f {encoding} -t UTF-8; a Windows editor saves UTF-8 "
                                               "when asked)")
    config.write_bytes(config.read_bytes().decode(encoding.lower().replace("utf-", "utf_")).encode())  # as iconv does
    assert main(["config", "--config", str(config), "--get", "seed"]) == 0
    assert capsys.readouterr().out == "7\n"
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_bytes("format: sate-pack\nversion: 1\ntask: mt\n".encode("utf-16"))
    with pytest.raises(SateError, match=r"sate.yaml: UTF-16 text, not UTF-8: convert it first"):
        read_pack_yaml(pack)


def test_an_unknown_key_in_a_packs_sate_yaml_is_refused(tmp_path: Path) -> None:
    """A top-level typo in a pack's sate.yaml (`decdoe:` for `decode:`) was ignored: the pack decoded with what the
    file had before, without a word."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: mt\ndecode: {beam: 5}\ndecdoe: {beam: 1}\n")
    with pytest.raises(SateError, match=r"sate.yaml: unknown key 'decdoe' \(a pack's sate.yaml holds format, version"):
        read_pack_yaml(pack)
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: mt\ndecode: {beam: 5}\n")
    assert read_pack_yaml(pack).decode == {"beam": 5}


def test_a_packs_section_of_another_kind_is_not_called_missing(tmp_path: Path) -> None:
    """`decode: []` (or `features: []` in a speech pack) read "the decode section is missing"."""
    pack = tmp_path / "pack"
    pack.mkdir()
    head = "format: sate-pack\nversion: 1\n"
    mapping = "must be a mapping of keys (as `sate pack` writes it), got"
    for body, says in (("task: mt\ndecode: []\n", f"decode {mapping} []"),
                       ("task: mt\ndecode:\n", f"decode {mapping} None"),
                       ("task: mt\n", "the decode section is missing"),
                       ("task: st\ndecode: {}\nfeatures: [fbank]\n", f"features {mapping} ['fbank']"),
                       ("task: st\ndecode: {}\n", "the features section is missing")):
        (pack / "sate.yaml").write_text(head + body)
        with pytest.raises(SateError) as refused:
            read_pack_yaml(pack)
        assert str(refused.value) == f"{pack / 'sate.yaml'}: {says}"


def test_a_packs_features_key_that_is_no_string_is_one_line(tmp_path: Path) -> None:
    """YAML reads `1:` or `true:` as a number or a boolean key: sorting it beside the string keys of a pack's
    features section was a TypeError traceback (tenth hostile pass)."""
    pack = tmp_path / "pack"
    pack.mkdir()
    features = "{type: fbank, num_mel_bins: 80, frame_length_ms: 25, frame_shift_ms: 10, sample_rate: 16000, " \
               "dither: 0.0, scale: 32768, min_samples: 1600, cmvn: global"
    for key in ("1", "true"):
        (pack / "sate.yaml").write_text(f"format: sate-pack\nversion: 1\ntask: st\ndecode: {{}}\n"
                                        f"features: {features}, {key}: 2}}\n")
        with pytest.raises(SateError) as refused:
            read_pack_yaml(pack)
        # named as written (eighteenth hostile pass: `true:` was named True)
        assert str(refused.value) == f"{pack / 'sate.yaml'}: features {key} differ from what this sate computes " \
            f"({key}=None)"
    (pack / "sate.yaml").write_text(f"format: sate-pack\nversion: 1\ntask: st\ndecode: {{}}\nfeatures: {features}}}\n")
    assert read_pack_yaml(pack).features["cmvn"] == "global"


def test_a_huge_value_from_any_file_is_shown_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Values read from files went whole into their error line (``!r``): a 300 KB Kaldi command line, model file
    format or hub config.json value gave a 300 KB "one-line" error. They are shown cut, as YAML values are."""
    import json

    kaldi = tmp_path / "kaldi"
    kaldi.mkdir()
    (kaldi / "wav.scp").write_text("r1 sox " + "x" * 300_000 + " |\n")
    (kaldi / "text").write_text("r1 hello\n")
    assert main(["prep", "--kaldi-dir", str(kaldi), "--out", str(tmp_path / "data")]) == 2
    one_short_line(capsys.readouterr().err)
    torch.save({"format": "f" * 300_000}, tmp_path / "model.pt")
    assert main(["pack", "--model", str(tmp_path / "model.pt"), "--data", str(tmp_path), "--out",
                 str(tmp_path / "pack")]) == 2
    one_short_line(capsys.readouterr().err)
    from sate.models.hub.files import get_key

    with pytest.raises(SateError) as err:
        get_key({"d_model": "x" * 300_000}, "d_model", tmp_path / "config.json", int)
    one_short_line(str(err.value))
    from sate.models.hub.whisper_files import whisper_sizes

    whisper = tmp_path / "whisper"
    whisper.mkdir()
    (whisper / "config.json").write_text(json.dumps({"model_type": "w" * 300_000}))
    (whisper / "model.safetensors").write_bytes(b"")
    with pytest.raises(SateError) as err:
        whisper_sizes(whisper)
    one_short_line(str(err.value))


def test_a_mustc_yaml_line_too_long_for_an_entry_is_refused_before_the_parser() -> None:
    """A line of a megabyte went through PyYAML (twice: composed, then loaded): 13 s for a 1 MB flow list, and a
    yaml file may hold a gigabyte; a long quoted value, with every field there, was read as an entry."""
    quoted = "- {duration: 1.0, offset: 0.0, speaker_id: '" + "s" * 100_000 + "', wav: ted_1.wav}"
    with pytest.raises(SateError, match=r"^tst\.yaml:7: a line of 100,062 characters, not a MuST-C yaml entry "
                                        r"\(those hold about a hundred; 65,536 at most are read\): .- \{dur"):
        parse_yaml_line(quoted, Path("tst.yaml"), 7)
    listed = "- {duration: 1.0, offset: 0.0, speaker_id: [" + "1, " * 300_000 + "1], wav: ted_1.wav}"
    with pytest.raises(SateError, match=r"^tst\.yaml:8: a line of 900,063 characters, not a MuST-C yaml entry"):
        parse_yaml_line(listed, Path("tst.yaml"), 8)


def test_an_espnet_config_is_bounded_as_every_config(tmp_path: Path) -> None:
    """An ESPnet experiment's config.yaml was read whole and parsed whatever its size, and a token list file it
    names was read whole, its lines split on U+2028 too (a token holding one shifted every later id)."""
    (tmp_path / "config.yaml").write_text("token_list: [a, b]\n# " + "x" * MAX_YAML_BYTES + "\n")
    with pytest.raises(SateError, match=r"config\.yaml: 4,194,\d+ bytes, more than any config \(4,194,304\)"):
        read_espnet(tmp_path / "model.pth", {"w": torch.zeros(1)}, None)
    (tmp_path / "tokens.txt").write_text("<blank>\na\u2028b\n<sos/eos>\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text("token_list: tokens.txt\n")
    assert read_espnet(tmp_path / "model.pth", {"w": torch.zeros(1)}, None).src_tokens == \
        ["<blank>", "a\u2028b", "<sos/eos>"]
    (tmp_path / "config.yaml").write_text("token_list: /dev/zero\n")
    with pytest.raises(SateError, match=r"/dev/zero:1: a NUL byte"):
        read_espnet(tmp_path / "model.pth", {"w": torch.zeros(1)}, None)


@pytest.mark.parametrize("value", ["*" + "a" * 100_000, "!" + "a" * 100_000 + " x"])
def test_a_yaml_error_quoting_a_long_alias_or_tag_is_one_short_line(tmp_path: Path, value: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """PyYAML's reason quotes an undefined alias or an unknown tag whole: a config, a pack's sate.yaml or a --set
    value holding a 3 MB one was a 3 MB error line (eleventh hostile pass)."""
    config = tmp_path / "mt.yaml"
    config.write_text(f"task: {value}\n")
    assert main(["config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    one_short_line(err)
    assert "invalid YAML (found undefined alias 'aaa" in err or "invalid YAML (could not determine a constructor" in err
    config.write_text("task: mt\n")
    assert main(["config", "--config", str(config), "--set", f"optim.lr={value}"]) == 2
    one_short_line(capsys.readouterr().err)
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text(f"format: sate-pack\nversion: 1\ntask: {value}\n")
    with pytest.raises(SateError) as err:
        read_pack_yaml(pack)
    one_short_line(str(err.value))


def test_a_character_yaml_does_not_allow_is_named_by_its_code(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """PyYAML's text, cut in the middle as a long value is, showed an ESC (#x001b) as "#x00..." (a NUL) and dropped
    where it stands (eleventh hostile pass)."""
    config = tmp_path / "mt.yaml"
    config.write_text("task: mt\x1b[31m\n")
    assert main(["config", "--config", str(config)]) == 2
    assert "invalid YAML (character #x001b at offset 8: special characters are not allowed)" in \
        capsys.readouterr().err
