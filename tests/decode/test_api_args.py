"""The Python API's arguments, checked (`sate.decode.api_args`): a program calling `SpeechTranslator` with a wrong
argument gets one `SateError` naming it, never a traceback from numpy or torch, nor an answer to another question."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.data.audio import SAMPLE_RATE, to_mono_16k
from sate.data.vocab import Vocabulary
from sate.decode.api import SpeechTranslator
from sate.decode.api_args import sample_rate
from sate.decode.pack import pack
from sate.errors import SateError
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config


@pytest.fixture(scope="module")
def translators(tmp_path_factory: pytest.TempPathFactory, st_pack: Path,
                prepared_data: Path) -> dict[str, SpeechTranslator]:
    root = tmp_path_factory.mktemp("api_args")
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    save_model_file(root / "mt.pt", build_model("mt", tiny_config("mt", 16), len(src), len(tgt)), src.tokens,
                    tgt.tokens)
    pack(root / "mt.pt", prepared_data, root / "mt", {"max_len_ratio": 0.5})
    return {"st": SpeechTranslator.load(st_pack, "cpu"), "mt": SpeechTranslator.load(root / "mt", "cpu")}


@pytest.fixture(scope="module")
def talk(utterances: list[np.ndarray]) -> np.ndarray:
    pause = np.zeros(SAMPLE_RATE // 2, dtype=np.float32)
    return np.concatenate([pause, utterances[0], pause])


@pytest.mark.slow
def test_one_input_given_where_a_list_goes(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                           tmp_path: Path) -> None:
    """A path was read character by character ("/: is a directory"); a text, letter by letter (five
    translations of "hello"); a bare (samples, rate) pair, as two inputs."""
    st, mt = translators["st"], translators["mt"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    for inputs in (str(tmp_path / "talk.wav"), tmp_path / "talk.wav"):
        with pytest.raises(SateError, match=r"^inputs: expected a list, got a single (str|PosixPath) .*in a list"):
            st.translate(inputs)  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^inputs: expected a list, got one \(samples, sample_rate\) pair"):
        list(st.stream((talk, SAMPLE_RATE)))  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^texts: expected a list, got a single str \('hello'\)"):
        mt.translate_text("hello")  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^texts\[1\]: expected a str, got NoneType"):
        mt.translate_text(["hello", None])  # type: ignore[list-item]
    assert len(st.translate([tmp_path / "talk.wav", (talk, SAMPLE_RATE)])) == 2
    with pytest.raises(SateError, match=r"^texts: expected a list, got NoneType$"):  # was a TypeError
        mt.translate_text(None)  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^inputs: expected a list, got int$"):
        st.translate(3)  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^texts\[1\]: not Unicode text: '\\udcff' at character 3 is a lone "):
        mt.translate_text(("hallo", "gut\udcff"))  # a TypeError deep in SentencePiece (eleventh hostile pass)
    assert mt.translate_text(t for t in ["hallo", "gut"]) == mt.translate_text(["hallo", "gut"])  # read once
    # a dict translated its keys, a set in its own order, exit as usual (thirteenth hostile pass)
    with pytest.raises(SateError, match=r"^texts: expected a list, got a dict \(its keys would be read\); pass a "):
        mt.translate_text({"hallo": 1})  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^inputs: expected a list, got a set \(it has no order to give the "):
        st.translate({tmp_path / "talk.wav"})  # type: ignore[arg-type]
    # decode_prepared('abc') and a list of anything else were AttributeErrors deep in the decoding
    with pytest.raises(SateError, match=r"^prepared: expected a list, got a single str \('abc'\)"):
        st.decode_prepared("abc")  # type: ignore[arg-type]
    ready = st.prepare(tmp_path / "talk.wav")
    with pytest.raises(SateError, match=r"^prepared\[1\]: expected what prepare\(\) returns, got dict$"):
        st.decode_prepared([ready, {}])  # type: ignore[list-item]
    assert st.decode_prepared(r for r in [ready]) == st.decode_prepared([st.prepare(tmp_path / "talk.wav")])


@pytest.mark.parametrize(("rate", "says"), [(float("nan"), "nan"), ("16k", "'16k'"), (None, "None"),
                                            (16000.9, "16000.9")])
def test_a_sample_rate_that_is_not_a_whole_number(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                  rate: object, says: str) -> None:
    """NaN, "16k" and None were tracebacks of int(); 16000.9 was taken as 16000 without a word."""
    with pytest.raises(SateError, match=rf"^<waveform 0>: the sample rate must be a whole number of Hz, got {says}$"):
        translators["st"].translate([(talk, rate)])  # type: ignore[list-item]
    assert len(translators["st"].translate([(talk, 16000.0)])) == 1


def test_a_dict_or_a_path_with_its_rate_is_named_for_what_it_is(translators: dict[str, SpeechTranslator],
                                                               talk: np.ndarray) -> None:
    """A datasets Audio value ({'array', 'sampling_rate'}) was unpacked as its two keys: "the sample rate must be a
    whole number of Hz, got 'sampling_rate'"; a (path, rate) pair was "expected samples ..., got ()" (twentieth
    hostile pass)."""
    with pytest.raises(SateError, match=r"^input 0: expected a file path or a \(samples, sample_rate\) pair, got a "
                                        r"dict \(a datasets Audio value\? pass \(d\['array'\], "
                                        r"d\['sampling_rate'\]\)\)$"):
        translators["st"].prepare({"array": talk, "sampling_rate": SAMPLE_RATE})  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^input 0: a \(path, sample_rate\) pair: give the path alone"):
        translators["st"].prepare(("talk.wav", SAMPLE_RATE))  # type: ignore[arg-type]


def test_a_pair_in_scipys_order_or_an_undecoded_audio_value_is_named(translators: dict[str, SpeechTranslator],
                                                                    talk: np.ndarray) -> None:
    """Twenty-first hostile pass: scipy.io.wavfile.read's (rate, samples) was "the sample rate must be a whole number
    of Hz, got array([[0, 0],\\n..." (a line break inside); a datasets Audio value not decoded ({'path', 'bytes'})
    was told to pass d['array'], a key it lacks."""
    pcm = (talk * 32767).astype(np.int16)
    for samples in (pcm, np.stack([pcm, pcm], 1)):
        with pytest.raises(SateError, match=r"^input 0: a \(sample_rate, samples\) pair, as scipy.io.wavfile.read "
                                            r"returns one: give \(samples, sample_rate\)$"):
            translators["st"].prepare((SAMPLE_RATE, samples))  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"got a dict \(a datasets Audio value not decoded\? pass its d\['path'\], "
                                        r"or cast the column with decode=True\)$"):
        translators["st"].prepare({"path": "talk.wav", "bytes": b"RIFF"})  # type: ignore[arg-type]


def test_a_sample_rate_in_a_0_d_array_or_tensor_is_its_number() -> None:
    """torch.tensor(16000) (a dataset in torch format gives its rate so) was "must be a whole number of Hz, got
    tensor(16000)"; np.array(16000) the same (twentieth hostile pass)."""
    for rate in (torch.tensor(16000), np.array(16000), torch.tensor(16000.0), np.int32(16000)):
        assert sample_rate(rate, "w") == 16000
    for rate, says in ((torch.tensor(16000.5), "16000.5"), (torch.tensor([16000]), "tensor"), (np.array(True), "True")):
        with pytest.raises(SateError, match=rf"^w: the sample rate must be a whole number of Hz, got {says}"):
            sample_rate(rate, "w")


def test_samples_channels_first_and_unsigned_pcm(talk: np.ndarray) -> None:
    """(channels, n) as torchaudio.load gives was two samples of many channels ("no speech found"), and one
    channel, (1, n), a mono file's, still was after that fix (nineteenth hostile pass); 8-bit PCM is unsigned,
    around 128, and was read with an offset of half full scale."""
    for channels in (talk[None], np.stack([talk, talk]), torch.from_numpy(talk)[None]):
        with pytest.raises(SateError, match=rf"got \({len(channels)}, \d+\): more channels than samples; channels "
                                            r"first\? pass samples.T"):
            to_mono_16k(channels, SAMPLE_RATE)
    assert np.allclose(to_mono_16k(talk[:, None], SAMPLE_RATE), talk, atol=1e-6)  # (n, 1) is mono
    with pytest.raises(SateError, match=r"got \(100, 0\): no channels"):
        to_mono_16k(np.zeros((100, 0), dtype=np.float32), SAMPLE_RATE)
    assert np.allclose(to_mono_16k(np.stack([talk, talk], axis=1), SAMPLE_RATE), talk, atol=1e-6)
    pcm8 = np.round(np.clip(talk, -1, 1) * 127 + 128).astype(np.uint8)
    assert np.abs(to_mono_16k(pcm8, SAMPLE_RATE) - talk).max() < 0.02  # 8 bits: steps of 1/128
    pcm16 = np.round(talk * 32767).astype(np.int16)
    assert np.abs(to_mono_16k(pcm16, SAMPLE_RATE) - talk).max() < 1e-3


def test_integer_pcm_of_several_channels_is_scaled_as_one_channel_is(talk: np.ndarray) -> None:
    """The channels' mean is float: int16 stereo (scipy's wavfile.read of a stereo file) was read as float samples
    32,768 times too loud, and unsigned 8-bit stereo off-centre, other features without a word (twentieth hostile
    pass)."""
    pcm16 = np.round(talk * 32767).astype(np.int16)
    pcm8 = np.round(np.clip(talk, -1, 1) * 127 + 128).astype(np.uint8)
    for mono in (pcm16, pcm8, pcm16.astype(np.int32) << 16, torch.from_numpy(pcm16)):
        stereo = np.stack([mono, mono], axis=1) if isinstance(mono, np.ndarray) else torch.stack([mono, mono], 1)
        assert np.array_equal(to_mono_16k(stereo, SAMPLE_RATE), to_mono_16k(mono, SAMPLE_RATE))


def test_64_bit_integer_samples_are_refused(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """`np.array` of a list of Python ints is int64: 16-bit PCM values read as 64-bit PCM (divided by 2^63) were
    silence, "no speech found", sending the user to check a recording that was fine."""
    pcm16 = np.round(talk * 32767).astype(np.int16)
    for samples in (pcm16.astype(np.int64), pcm16.astype(np.int64).astype(np.uint64)):
        with pytest.raises(SateError, match=rf"^<waveform 0>: {samples.dtype} samples: no audio format stores 64-bit "
                                            r"integer PCM .*samples.astype\(np.int16\) if they are 16-bit"):
            translators["st"].translate([(samples, SAMPLE_RATE)])
    assert len(translators["st"].translate([(pcm16.astype(np.int32) << 16, SAMPLE_RATE)])) == 1


def test_an_empty_name_is_named_as_such(translators: dict[str, SpeechTranslator]) -> None:
    """An input '' was read as Path(''), the current directory: ".: is a directory, not an audio file" named a '.'
    nobody gave (fourteenth hostile pass)."""
    with pytest.raises(SateError, match=r"^input 0: an empty name, no file$"):
        translators["st"].translate([""])
    failures = list(translators["st"].stream(["", ""]))
    assert [f.error for f in failures] == ["input 0: an empty name, no file", "input 1: an empty name, no file"]


def test_batch_size_options_and_features(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    st = translators["st"]
    for size in (0, 1.5, "2", 10**20):  # 10**20 is a whole number >= 1, as the message said it was not
        with pytest.raises(SateError, match=r"^batch_size must be a whole number from 1 to 2\*\*63-1, got "):
            st.translate([(talk, SAMPLE_RATE)], batch_size=size)  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^options must be DecodeOptions \(e.g. translator.with_options\(beam=10\)\), "
                                        r"got dict"):
        st.translate([(talk, SAMPLE_RATE)], options={"beam": 2})  # type: ignore[arg-type]
    feats = st.features(talk)
    assert st.decode_features([feats], st.with_options(beam=2), batch_size=1)[0][0] is not None
    for bad, says in [(feats[:, :79], r"expected an array of shape \(T, 80\), got \(\d+, 79\)"),
                      (np.pad(feats, ((0, 0), (0, 1))), r"expected an array of shape \(T, 80\), got \(\d+, 81\)"),
                      (feats[:, 0], r"expected an array of shape \(T, 80\)"),
                      (feats[:3], "3 frames, fewer than the 8 of 0.1 s"),
                      (np.full_like(feats, np.nan), "holds NaN or infinite values"),
                      (np.full_like(feats, 1e38), r"a value of 1e\+38, beyond the ±1e\+06 of any feature"),  # was
                      # "the model's weights hold NaN": the encoder overflowed (eleventh hostile pass)
                      (feats.astype(np.int32), "expected float values")]:
        with pytest.raises(SateError, match=rf"^feats\[0\]: {says}"):
            st.decode_features([bad])


def test_features_take_samples_as_translate_does(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """`features(samples)` read int16 PCM as floats 32,768 times too loud (other features, no word), NaN or inf as
    NaN features, and a 2-D (channels-first) or text input was a numpy traceback; an MT pack gave features. No
    samples at all are refused as `translate` refuses them."""
    st = translators["st"]
    pcm16 = np.round(talk * 32767).astype(np.int16)
    assert np.abs(st.features(pcm16) - st.features(pcm16 / 32768.0)).max() < 1e-3
    for bad, says in [(np.full(1600, np.nan, np.float32), "1600 samples are not finite"),
                      (np.stack([talk, talk]), r"expected samples of shape \(n, channels\), got \(2, "),
                      (np.zeros((4, 2, 2), np.float32), r"expected samples of shape \(n,\) or \(n, channels\)"),
                      (np.zeros(1600, np.complex64), "expected float samples in"),
                      # 0.1 s of padding's features, which decoded to a translation (nineteenth hostile pass)
                      (talk[:0], "holds no audio samples$"), (np.zeros((0, 2), np.float32), "holds no audio samples$")]:
        with pytest.raises(SateError, match=rf"^wave: {says}"):
            st.features(bad)
    with pytest.raises(SateError, match=r"is an MT model: it translates text \(translate_text\), not audio"):
        translators["mt"].features(talk)


def test_numpy_scalars_are_the_numbers_they_hold(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """A sample rate, batch size or decoding option given as a NumPy scalar (np.int64(16000) read from an array,
    np.float32(1.2) from a grid of values) was refused as no whole number, no integer or no finite number (twelfth
    hostile pass); long double features were a TypeError of torch."""
    import json
    from dataclasses import asdict

    st = translators["st"]
    assert len(st.translate([(talk, np.int64(SAMPLE_RATE))], batch_size=np.int64(2))) == 1
    options = st.with_options(beam=np.int64(3), lenpen=np.float32(1.5))
    assert type(options.beam) is int and options.beam == 3 and options.lenpen == 1.5
    json.dumps(asdict(options))  # what results.json records: Python numbers
    with pytest.raises(SateError, match="^<waveform 0>: the sample rate must be a whole number of Hz, got 16000.5$"):
        st.translate([(talk, np.float64(16000.5))])
    feats = st.features(talk)
    assert st.decode_features([feats.astype(np.longdouble)]) == st.decode_features([feats])


def test_half_precision_inputs_are_checked_as_any(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """float16 samples and features: the bounds (1e10, 1e6) are inf in float16, so numpy printed an overflow warning
    and infinite samples passed the check (fourteenth hostile pass). They are now read as float32 first."""
    import warnings

    st = translators["st"]
    feats = st.features(talk)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert st.decode_features([feats.astype(np.float16)])[0][0] is not None
        assert np.abs(st.features(talk.astype(np.float16)) - feats).max() < 0.1
        with pytest.raises(SateError, match=r"^wave: 1 samples are not finite \(NaN or inf\), the first at 0.000 s"):
            st.features(np.concatenate([[np.inf], talk]).astype(np.float16))
        with pytest.raises(SateError, match=r"^feats\[0\]: holds NaN or infinite values"):
            st.decode_features([np.full_like(feats, np.inf).astype(np.float16)])


def test_integer_pcm_stored_as_floats_is_refused(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """int16 PCM made float without scaling (np.frombuffer(pcm, np.int16).astype(np.float32)) was read as it was,
    32,768 times too loud: another segmentation and another translation than the same samples as int16, without a
    word (twenty-second hostile pass). Float samples beyond ±16 (24 dB over full scale) are refused; louder audio
    that is still float audio (1.5 times full scale) is read. The same PCM in an int32 array is named too."""
    st = translators["st"]
    pcm = np.round(talk / np.abs(talk).max() * 20000).astype(np.int16)
    with pytest.raises(SateError, match=r"^<waveform 0>: float samples reach 20000 \(the first beyond ±16 at [0-9.]+ "
                                        r"s\), where full scale is 1: integer PCM stored as floats\? Scale them to "
                                        r"\[-1, 1\]"):
        st.translate([(pcm.astype(np.float32), SAMPLE_RATE)])
    assert st.translate([(pcm, SAMPLE_RATE)]) == st.translate([((pcm / 32768).astype(np.float32), SAMPLE_RATE)])
    # and 16-bit PCM in an int32 array, 96 dB below int32's full scale, was "no speech found"
    with pytest.raises(SateError, match=r"^<waveform 0>: int32 samples that stay within the int16 range \(peak "
                                        r"20000\): 16-bit PCM in an int32 array\? Pass samples.astype\(np.int16\)$"):
        st.translate([(pcm.astype(np.int32), SAMPLE_RATE)])
    assert st.translate([(pcm.astype(np.int32) * 65536, SAMPLE_RATE)]) == st.translate([(pcm, SAMPLE_RATE)])
    assert np.isfinite(st.features((pcm / 32768 * 1.5).astype(np.float32))).all()


def test_vad_settings_of_the_wrong_kind(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """A dict for `vad` was an AttributeError, and a VadOptions of text or None a TypeError of math.isfinite
    (twelfth hostile pass)."""
    from sate.decode.vad import VadOptions

    with pytest.raises(SateError, match=r"^vad must be VadOptions \(e.g. VadOptions\(max_segment=10.0\)\), got dict$"):
        translators["st"].translate([(talk, SAMPLE_RATE)], vad={"max_segment": 10})  # type: ignore[arg-type]
    for value, says in (("5", "'5'"), (None, "None"), (True, "True")):
        with pytest.raises(SateError, match=rf"^max_segment \(--max-segment\) must be a finite number of seconds >= 0, "
                                            rf"got {says}$"):
            VadOptions(max_segment=value)  # type: ignore[arg-type]
    # min_speech beyond the longest segment: no piece could ever be kept, so every input was "no speech" (fourteenth)
    with pytest.raises(SateError, match=r"^min_speech \(1e\+20 s\) must be at most max_segment \(--max-segment, "
                                        r"20 s\)"):
        VadOptions(min_speech=1e20)
    assert VadOptions(min_speech=20.0).min_speech == 20.0


def test_vad_options_of_numpy_scalars_huge_numbers_or_a_padding_no_segment_holds() -> None:
    """VadOptions(max_segment=np.float32(20)) said "must be a finite number of seconds >= 0", which 20 is; 10**400 the
    same; padding=60 gave an empty range ("at least 121 s and at most 120 s"): review of the 25th hostile pass."""
    from sate.decode.vad import VadOptions

    assert VadOptions(max_segment=np.float32(20), min_pause=np.float64(0.5)).max_segment == 20.0
    with pytest.raises(SateError, match=r"^max_segment \(--max-segment\) must be at least 1.2 s and at most 120 s, "
                                        r"got 1000"):
        VadOptions(max_segment=10**400)
    with pytest.raises(SateError, match=r"^padding must be at most 59.5 s \(a segment holds it on both sides, and is "
                                        r"at most 120 s\), got 60$"):
        VadOptions(padding=60)
    assert VadOptions(padding=59.5, max_segment=120).padding == 59.5


def test_vad_options_of_0d_arrays_and_tensors_are_their_numbers() -> None:
    """VadOptions(min_speech=np.array(0.2)) (a value of a grid kept as a 0-d array) and a 0-d tensor were "must be a
    finite number of seconds >= 0", which 0.2 is, where DecodeOptions reads them as their numbers; NumPy's bool is
    refused as True is (33rd hostile pass)."""
    from sate.decode.vad import VadOptions

    options = VadOptions(min_speech=np.array(0.2), max_segment=torch.tensor(10), min_pause=np.array(1))
    assert (options.min_speech, options.max_segment, options.min_pause) == (0.2, 10, 1)
    assert type(options.min_speech) is float and type(options.max_segment) is int
    for bad, shown_as in ((np.bool_(True), "True"), (np.array(True), "True"), (np.array([0.2]), r"array\(\[0.2\]\)"),
                          (np.array(np.nan), "nan")):
        with pytest.raises(SateError, match=rf"^min_pause \(--min-pause\) must be a finite number of seconds >= 0, "
                                            rf"got {shown_as}$"):
            VadOptions(min_pause=bad)


@pytest.mark.parametrize("directory", [None, 3, b"packs/st"])
def test_load_takes_a_path(directory: object) -> None:
    """None, a number or bytes for the pack's directory were TypeErrors of Path()."""
    with pytest.raises(SateError, match=rf"^directory: expected a path \(str or Path\), got "
                                        rf"{type(directory).__name__}( \(decode a name of bytes with "
                                        r"os.fsdecode\(name\)\))?$"):
        SpeechTranslator.load(directory, "cpu")  # type: ignore[arg-type]


def test_a_name_too_long_for_the_file_system_is_a_failure_of_its_own(translators: dict[str, SpeechTranslator],
                                                                      talk: np.ndarray, tmp_path: Path) -> None:
    """A file name longer than the file system allows was an OSError of `Path.is_file` (thirteenth hostile pass,
    second round): `stream` ended there, and `sate translate` dropped every other file with it, writing none."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    long_name = tmp_path / ("a" * 300 + ".wav")
    items = list(st.stream([long_name, tmp_path / "talk.wav"]))
    assert items[0].error == f"{long_name}: File name too long (a name longer than the file system allows: choose a " \
                             "shorter one)"  # type: ignore[union-attr]
    assert items[1].duration > 0  # type: ignore[union-attr]
    with pytest.raises(SateError, match=r"^/.* \(a name of 4,\d+ characters\): File name too long"):
        st.translate([tmp_path / ("b/" * 2100 + "x.wav")])


def test_rows_of_unequal_lengths_are_named(translators: dict[str, SpeechTranslator], talk: np.ndarray) -> None:
    """Nested lists of unequal lengths, or `features((samples, rate))` (the pair `translate` takes), were numpy's
    "inhomogeneous shape" ValueError, a traceback (thirteenth hostile pass, second round)."""
    st = translators["st"]
    unequal = "got (list|tuple) of rows of unequal lengths"
    with pytest.raises(SateError, match=rf"^wave: expected samples of shape \(n,\) or \(n, channels\), {unequal} \(a "
                                        r"\(samples, sample_rate\) pair\? give the samples alone\)$"):
        st.features((talk, SAMPLE_RATE))  # type: ignore[arg-type]
    with pytest.raises(SateError, match=rf"^<waveform 0>: expected samples of shape \(n,\) or \(n, channels\), "
                                        rf"{unequal}$"):
        st.translate([([[0.1, 0.2], [0.3]], SAMPLE_RATE)])
    with pytest.raises(SateError, match=rf"^feats\[0\]: expected an array of shape \(T, 80\), {unequal}$"):
        st.decode_features([[[0.0] * 80, [0.0] * 79]])  # type: ignore[list-item]


def test_a_torch_tensor_is_read_whatever_its_grad_or_type(talk: np.ndarray) -> None:
    """A tensor that requires grad was a RuntimeError from numpy(); a bfloat16 one was "rows of unequal lengths"
    (NumPy has no bfloat16); one on the meta device, the same (nineteenth hostile pass)."""
    samples = torch.from_numpy(talk)
    assert np.array_equal(to_mono_16k(samples.clone().requires_grad_(), SAMPLE_RATE), to_mono_16k(talk, SAMPLE_RATE))
    assert np.allclose(to_mono_16k(samples.bfloat16(), SAMPLE_RATE), talk, atol=1e-2)  # 8 bits of mantissa
    with pytest.raises(SateError, match=r"^w: expected samples of shape \(n,\) or \(n, channels\), got a tensor on "
                                        r"the meta device, which holds no values$"):
        to_mono_16k(torch.empty(100, device="meta"), SAMPLE_RATE, "w")
    # a sparse tensor was "rows of unequal lengths" (twentieth hostile pass)
    assert np.array_equal(to_mono_16k(samples.to_sparse(), SAMPLE_RATE), to_mono_16k(talk, SAMPLE_RATE))


def test_a_prepared_file_decoded_twice_is_named(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                tmp_path: Path) -> None:
    """A file's segments are read as they are decoded, once: a prepared file decoded again (with other options), or
    twice in one list, was a StopIteration traceback after the others had been decoded (25th hostile pass). Samples
    given in memory are decoded again as before."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    ready = st.prepare(tmp_path / "talk.wav")
    first = st.decode_prepared([ready])
    with pytest.raises(SateError, match=rf"^prepared\[0\] \({tmp_path}/talk.wav\): its segments were read already "
                                        r"\(decoded, or taken from its .waves\); a file's segments are read once, as "
                                        "they are decoded: prepare.. it again for each decoding$"):
        st.decode_prepared([ready], st.with_options(beam=1))
    again = st.prepare(tmp_path / "talk.wav")
    with pytest.raises(SateError, match=r"^prepared\[1\] \(.*talk.wav\): the same as prepared\[0\]; a file's"):
        st.decode_prepared([again, again])
    assert st.decode_prepared([st.prepare(tmp_path / "talk.wav")]) == first
    samples = st.prepare((talk, SAMPLE_RATE))
    assert st.decode_prepared([samples, samples]) == st.decode_prepared([samples]) * 2


def test_read_only_samples_draw_no_warning_from_torch(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Samples that may not be written (`np.load(..., mmap_mode="r")`, `np.frombuffer`) drew torch's "The given NumPy
    array is not writable" warning from the fbank (25th hostile pass), and mapped features given to `decode_features`
    from its padding; the result is that of a copy. torch warns once a process, so what is checked is that every array
    handed to torch may be written, whatever ran before."""
    st = translators["st"]
    np.save(tmp_path / "talk.npy", talk)
    mapped = np.load(tmp_path / "talk.npy", mmap_mode="r")
    assert not mapped.flags.writeable
    feats = st.features(talk)
    np.save(tmp_path / "feats.npy", feats)
    read_only: list[str] = []
    for name in ("from_numpy", "as_tensor", "tensor"):
        def spy(data: object, *rest: object, _real: object = getattr(torch, name), _name: str = name,
                **kw: object) -> torch.Tensor:
            if isinstance(data, np.ndarray) and not data.flags.writeable:
                read_only.append(_name)
            return _real(data, *rest, **kw)  # type: ignore[operator]
        monkeypatch.setattr(torch, name, spy)
    got = st.translate([(mapped, SAMPLE_RATE)])
    got_feats = st.features(np.frombuffer(talk.tobytes(), dtype=np.float32))
    decoded = st.decode_features([np.load(tmp_path / "feats.npy", mmap_mode="r")])
    monkeypatch.undo()
    assert read_only == []
    assert got == st.translate([(talk.copy(), SAMPLE_RATE)])
    np.testing.assert_array_equal(got_feats, feats)
    assert decoded == st.decode_features([feats])


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_raw_pcm_bytes_are_named_with_how_to_read_them(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                       kind: type) -> None:
    """The frames of `wave`'s readframes() given as samples: bytes were "a (path, sample_rate) pair", a bytearray or
    a memoryview read as 8-bit samples, twice as many as there were ("no speech found" of 16-bit speech; 25th hostile
    pass). The advice, followed, translates them."""
    st = translators["st"]
    data = kind((talk * 30000).astype(np.int16).tobytes())
    with pytest.raises(SateError, match=rf"^input 0: {2 * len(talk):,} raw bytes, not samples: decode them first, "
                                        r"e.g. \(np.frombuffer\(data, np.int16\), sample_rate\) for 16-bit PCM$"):
        st.translate([(data, SAMPLE_RATE)])
    assert st.translate([(np.frombuffer(data, np.int16), SAMPLE_RATE)])[0].duration == len(talk) / SAMPLE_RATE


def test_a_file_name_given_to_features_is_named(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                tmp_path: Path) -> None:
    """`features("talk.wav")` was "expected samples of shape (n,) or (n, channels), got ()" (25th hostile pass); the
    advice, followed, gives the file's features."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    for name in (str(tmp_path / "talk.wav"), tmp_path / "talk.wav"):
        with pytest.raises(SateError, match=r"^wave: a file name \('.*talk.wav'\), not samples: give its 16 kHz "
                                            r"samples \(prepare\(path\).waves are a file's, cut at pauses\)$"):
            st.features(name)  # type: ignore[arg-type]
    assert [f.shape[1] for f in map(st.features, st.prepare(tmp_path / "talk.wav").waves)] == [80]


@pytest.mark.parametrize(("given", "says"), [({"beam": 2.5}, "beam must be an integer, got 2.5"),
                                             ({"beam": 1000}, "beam must be at least 1 and at most 256, got 1000"),
                                             ({"max_len_ratio": 50.0}, "max_len_ratio must be positive and at most")])
def test_options_built_directly_are_checked_as_with_options_checks_them(translators: dict[str, SpeechTranslator],
                                                                        given: dict, says: str) -> None:
    """`DecodeOptions(beam=2.5)` (as docs/inference.md builds them for beam_search) was a TypeError deep in torch, and
    a beam or max_len_ratio past the documented bounds was decoded, however long it took (25th hostile pass)."""
    from sate.decode.options import DecodeOptions

    mt = translators["mt"]
    with pytest.raises(SateError, match=rf"^options: {says}"):
        mt.translate_text(["hallo"], DecodeOptions(**given))
    built = DecodeOptions(beam=3, max_len_ratio=mt.options.max_len_ratio)  # the pack's own ratio
    assert mt.translate_text(["hallo"], built) == mt.translate_text(["hallo"], mt.with_options(beam=3))


def test_a_name_holding_a_nul_character_is_one_inputs_failure(translators: dict[str, SpeechTranslator],
                                                              talk: np.ndarray, tmp_path: Path) -> None:
    """A name holding NUL (names split on newlines that `find -print0` separated with NUL) was a ValueError of
    os.stat, raised through `stream`, which ended it: the inputs after it were never decoded (25th hostile pass)."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    got = list(st.stream(["talk\0.wav", tmp_path / "talk.wav\0", tmp_path / "talk.wav"]))
    assert [getattr(item, "error", None) for item in got[:2]] == [
        f"{shown}: a name holding a NUL character, which no file's name holds (names split on newlines where find "
        "-print0 wrote NUL-separated ones?)" for shown in ("talk\\x00.wav", f"{tmp_path}/talk.wav\\x00")]
    assert got[2] == st.translate([tmp_path / "talk.wav"])[0]


@pytest.mark.parametrize("name", ["talk.wav", "~/talk.wav"])
def test_a_missing_relative_input_names_the_folder_it_was_looked_for_in(translators: dict[str, SpeechTranslator],
                                                                        talk: np.ndarray, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        name: str) -> None:
    """`translate(["~/talk.wav"])` in a notebook (no shell expands the '~') and a relative name from another folder
    were "no such file", with no hint why (25th hostile pass); a relative name that is there is read as before."""
    st = translators["st"]
    monkeypatch.chdir(tmp_path)
    tilde = "; a '~' here is not your home folder: write the path out" if name.startswith("~") else ""
    with pytest.raises(SateError, match=rf"^{re.escape(name)}: no such file \(relative to the current directory, "
                                        rf"{re.escape(str(tmp_path))}{re.escape(tilde)}\)$"):
        st.translate([name])
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    assert st.translate(["talk.wav"])[0].duration == len(talk) / SAMPLE_RATE


def test_path_objects_of_any_kind_are_read_as_their_paths(translators: dict[str, SpeechTranslator],
                                                          talk: np.ndarray, tmp_path: Path) -> None:
    """`translate(list(os.scandir(folder)))` (os.DirEntry) and a PurePath were "expected a file path or a (samples,
    sample_rate) pair" (25th hostile pass): any os.PathLike naming a file is read, and named, as its path."""
    import os
    from pathlib import PurePath

    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    want = st.translate([tmp_path / "talk.wav"])
    assert st.translate(list(os.scandir(tmp_path))) == want
    assert st.translate([PurePath(tmp_path / "talk.wav")]) == want
    assert [item.error for item in st.stream([PurePath(tmp_path / "gone.wav")])] == [  # type: ignore[union-attr]
        f"{tmp_path / 'gone.wav'}: no such file"]


@pytest.mark.parametrize("given", [{"beam": np.int64(3)}, {"beam": 3, "lenpen": np.float32(1.25)},
                                   {"beam": torch.tensor(3)}], ids=["np.int64", "np.float32", "tensor"])
def test_options_built_directly_take_numpy_and_torch_scalars_as_with_options_does(
        translators: dict[str, SpeechTranslator], given: dict) -> None:
    """`for beam in np.arange(1, 9): translate(x, DecodeOptions(beam=beam))` decoded before the options built directly
    were checked, and `with_options(beam=np.int64(3))` still did; the check refused np.int64(3) as no integer."""
    from sate.decode.options import DecodeOptions

    mt = translators["mt"]
    built = DecodeOptions(**given, max_len_ratio=mt.options.max_len_ratio)
    assert mt.translate_text(["hallo"], built) == mt.translate_text(["hallo"], mt.with_options(**given))


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_raw_bytes_given_to_features_are_named(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                               kind: type) -> None:
    """`features(frames)` of `wave`'s readframes(): bytes were "expected samples ..., got ()", and a bytearray or a
    memoryview was read as 8-bit samples, twice as many frames of noise (25th hostile pass); the advice, followed,
    gives the samples' features."""
    st = translators["st"]
    pcm = (talk * 30000).astype(np.int16)
    data = kind(pcm.tobytes())
    with pytest.raises(SateError, match=rf"^wave: {2 * len(talk):,} raw bytes, not samples: decode them first, "
                                        r"e.g. np.frombuffer\(data, np.int16\) for 16-bit PCM$"):
        st.features(data)  # type: ignore[arg-type]
    assert np.array_equal(st.features(np.frombuffer(data, np.int16)), st.features(pcm))


def test_a_file_name_as_bytes_is_named_as_one_not_as_raw_pcm(translators: dict[str, SpeechTranslator],
                                                             talk: np.ndarray, tmp_path: Path) -> None:
    """`translate([(os.fsencode(path), 16000)])` was called "47 raw bytes", with advice (np.frombuffer) that decodes
    the file's name as audio (25th hostile pass); the advice given now, followed, translates the file, and
    `features` of such a name says where a file's samples come from."""
    import os

    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    name = os.fsencode(tmp_path / "talk.wav")
    with pytest.raises(SateError, match=r"^input 0: a file name as bytes \(b'/.*talk.wav'\), not samples: give "
                                        r"the path alone, as a str \(os.fsdecode\(name\)\); its rate is read from "
                                        r"the file$"):
        st.translate([(name, SAMPLE_RATE)])
    assert st.translate([os.fsdecode(name)])[0].duration == len(talk) / SAMPLE_RATE
    with pytest.raises(SateError, match=r"^wave: a file name as bytes \(b'/.*talk.wav'\), not samples: give its 16 "
                                        r"kHz samples \(prepare\(os.fsdecode\(name\)\).waves are a file's"):
        st.features(name)  # type: ignore[arg-type]
    assert [f.shape[1] for f in map(st.features, st.prepare(os.fsdecode(name)).waves)] == [80]


def test_typed_views_and_names_of_other_encodings_or_given_alone(translators: dict[str, SpeechTranslator],
                                                                talk: np.ndarray, tmp_path: Path) -> None:
    """Review of the raw-bytes rule: a typed memoryview of samples (of an int16 array) was refused as raw bytes,
    where it had given the array's features; a file name as bytes that is not UTF-8 (`os.fsencode` of a Latin-1
    name) got the np.frombuffer advice, which decodes the name as audio; a name as bytes given alone was "expected a
    file path ..." (and b"ab" would unpack as the pair (97, 98))."""
    import array
    import os

    st = translators["st"]
    pcm = (talk * 30000).astype(np.int16)
    assert np.array_equal(st.features(memoryview(pcm)), st.features(pcm))  # type: ignore[arg-type]
    assert np.array_equal(st.features(memoryview(array.array("h", pcm.tobytes()))), st.features(pcm))  # type: ignore
    latin = os.fsencode(str(tmp_path)) + b"/caf\xe9.wav"
    with open(latin, "wb") as f:
        sf.write(f, talk, SAMPLE_RATE, format="WAV")
    with pytest.raises(SateError, match=r"^input 0: a file name as bytes \(b'/.*caf\\xe9.wav'\), not samples: give "
                                        r"the path alone, as a str \(os.fsdecode\(name\)\)"):
        st.translate([(latin, SAMPLE_RATE)])
    for alone in (latin, os.fsencode(tmp_path / "x.wav"), b"ab"):
        with pytest.raises(SateError, match=r"^input 0: (a file name as bytes \(.*\), not samples: give it as a str "
                                            r"\(os.fsdecode\(name\)\)|2 raw bytes, not samples)"):
            st.translate([alone])  # type: ignore[list-item]
    assert st.translate([os.fsdecode(latin)])[0].duration == len(talk) / SAMPLE_RATE


def test_a_prepared_file_only_peeked_at_is_not_called_decoded(translators: dict[str, SpeechTranslator],
                                                              talk: np.ndarray, tmp_path: Path) -> None:
    """`next(ready.waves)` (a look at the first segment) and then `decode_prepared([ready])` was refused as "decoded
    already", which it never was (25th hostile pass); the advice, followed, decodes it."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    ready = st.prepare(tmp_path / "talk.wav")
    next(ready.waves)  # type: ignore[call-overload]
    with pytest.raises(SateError, match=r"^prepared\[0\] \(.*talk.wav\): its segments were read already \(decoded, "
                                        r"or taken from its .waves\)"):
        st.decode_prepared([ready])
    assert st.decode_prepared([st.prepare(tmp_path / "talk.wav")])[0].segments


def test_a_missing_relative_name_in_a_deleted_current_directory_is_named(translators: dict[str, SpeechTranslator],
                                                                         tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The note on what a relative name is relative to asked for the current directory, which raises when it was
    deleted: `sate segment talk.wav` printed a bare "No such file or directory", neither naming the input nor counting
    it failed, and `SpeechTranslator.load("packs/st")` was a FileNotFoundError (25th hostile pass)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(SateError, match=r"^talk.wav: no such file \(relative to the current directory, which was "
                                        r"deleted: cd to one that is there\)$"):
        translators["st"].translate(["talk.wav"])
    with pytest.raises(SateError, match=r"packed model directory is missing \(relative to the current directory, "
                                        r"which was deleted"):
        SpeechTranslator.load("packs/st", "cpu")


def test_a_file_removed_between_its_two_reads_fails_alone(translators: dict[str, SpeechTranslator],
                                                          talk: np.ndarray, tmp_path: Path) -> None:
    """A file is read twice: to cut it at pauses, then as its group is decoded. One removed in between (or made
    unreadable) ended the whole run, exit 2, nothing written for the others (25th hostile pass, hand25u); it is
    that input's failure now, and the others' results are what they are alone."""
    from sate.decode.api import Failure

    st = translators["st"]
    first, second = tmp_path / "a.wav", tmp_path / "b.wav"
    for path in (first, second):
        sf.write(path, talk, SAMPLE_RATE)
    alone = st.translate([str(first)])[0]

    def inputs():  # b.wav goes once both are prepared, before their group is decoded
        yield str(first)
        yield str(second)
        second.unlink()

    out = list(st.stream(inputs()))
    assert out[0] == alone
    assert isinstance(out[1], Failure) and out[1].source == str(second)
    assert out[1].error.startswith(f"{second}: changed since it was first read: cannot read audio"), out[1].error
    assert "\n" not in out[1].error

    def shortened():  # b.wav rewritten with its first tenth alone: "wave: holds no audio samples" ended the group
        yield str(second)
        yield str(first)
        sf.write(second, talk[:len(talk) // 10], SAMPLE_RATE)

    sf.write(second, talk, SAMPLE_RATE)
    out = list(st.stream(shortened()))
    assert isinstance(out[0], Failure) and out[1] == alone, out
    assert out[0].error.startswith(f"{second}: changed since it was first read: it ends before "), out[0].error


def test_a_segment_ending_past_the_file_by_rounding_is_no_change() -> None:
    """Segment ends are rounded to the millisecond, so the last may end up to half of one past the file's end: every
    file whose speech ran to its end and whose length in samples was 8 to 15 past a millisecond was "changed since it
    was first read" (review of the 25th hostile pass)."""
    from sate.decode.api import PreparedAudio, _guarded
    from sate.decode.vad import cut_blocks

    wave = np.full(16012, 0.1, np.float32)  # 1.00075 s
    spans = [(0.1, 0.5), (0.6, 1.001)]  # the last ends 4 samples past the file
    errors: dict[int, str] = {}
    blocks = iter([wave[:9000], wave[9000:]])
    item = PreparedAudio("talk.wav", len(wave) / SAMPLE_RATE, spans, cut_blocks(blocks, spans))
    assert [len(w) for w in _guarded(item, errors, 0).waves] == [6400, 6412] and errors == {}
    short = PreparedAudio("talk.wav", len(wave) / SAMPLE_RATE, spans, cut_blocks(iter([wave[:12000]]), spans))
    list(_guarded(short, errors, 0).waves)
    assert errors[0].startswith("talk.wav: changed since it was first read: it ends before 0.60 s now")


def test_a_prepared_input_whose_waves_are_not_one_a_span_is_refused(translators: dict[str, SpeechTranslator],
                                                                    talk: np.ndarray, tmp_path: Path) -> None:
    """A prepared input given its own segmentation, its spans cut to the first of `prepare`'s and its waves left as
    they were, gave its second wave's translation to the next input, exit as usual; fewer waves than spans was a
    StopIteration traceback (thirtieth hostile pass). The advice, followed, decodes the spans given."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", np.concatenate([talk, talk]), SAMPLE_RATE)
    whole = st.decode_prepared([st.prepare(tmp_path / "talk.wav")])[0]
    assert len(whole.segments) == 2
    ready = st.prepare(tmp_path / "talk.wav")
    first = dataclasses.replace(ready, spans=ready.spans[:1])
    with pytest.raises(SateError, match=r"^prepared\[0\] \(.*talk.wav\): 1 span but more waves: its waves are the "
                                        r"samples of its spans, one each, in order \(spans changed alone"):
        st.decode_prepared([first, st.prepare((talk, SAMPLE_RATE))])
    ready = st.prepare(tmp_path / "talk.wav")
    fewer = dataclasses.replace(ready, waves=list(ready.waves)[:1])
    with pytest.raises(SateError, match=r"^prepared\[1\] \(.*talk.wav\): 2 spans but 1 wave: "):
        st.decode_prepared([st.prepare((talk, SAMPLE_RATE)), fewer])
    ready = st.prepare(tmp_path / "talk.wav")
    given = dataclasses.replace(ready, spans=ready.spans[:1], waves=list(ready.waves)[:1])  # as the advice says
    assert st.decode_prepared([given])[0].segments == whole.segments[:1]


def test_a_name_read_from_a_list_with_its_line_break_is_told_to_strip_it(translators: dict[str, SpeechTranslator],
                                                                         talk: np.ndarray, tmp_path: Path) -> None:
    """`stream(open("list.txt"))` gave every input "talk.wav", a line break, then ": no such file", a message of two
    lines that did not say why (thirtieth hostile pass). A file whose name holds the line break is read as ever."""
    st = translators["st"]
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    (tmp_path / "list.txt").write_text(f"{tmp_path}/talk.wav\n")
    with open(tmp_path / "list.txt") as names:
        (failure,) = st.stream(names)
    assert failure.error == (f"{tmp_path}/talk.wav\\n: no such file; {tmp_path}/talk.wav is there: the name given "
                             "ends with '\\n', as the lines of a file read in Python keep their line break (for line "
                             "in open(list), readlines()): strip it (name.strip())")
    with pytest.raises(SateError, match=r"^ .*talk.wav: no such file; .*talk.wav is there: the name given begins "
                                        r"with ' ': strip it \(name.strip\(\)\)$"):
        st.translate([f" {tmp_path}/talk.wav"])
    sf.write(tmp_path / "talk.wav\n", talk, SAMPLE_RATE, format="WAV")
    assert st.translate([f"{tmp_path}/talk.wav\n"])[0].segments == st.translate([tmp_path / "talk.wav"])[0].segments


def test_a_missing_name_with_a_line_break_is_one_line(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing name ending in a line break whose stripped name is missing too ("zz.wav\\n") was "zz.wav", a line
    break, then ": no such file": two lines (review of the thirtieth hostile pass); a list saved on Windows's
    carriage return, where the file is there without it, was printed raw."""
    st = translators["st"]
    monkeypatch.chdir(tmp_path)
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    with pytest.raises(SateError) as missing:
        st.translate(["zz.wav\n"])
    assert str(missing.value) == f"zz.wav\\n: no such file (relative to the current directory, {tmp_path})"
    (failure,) = st.stream(["talk.wav\r"])
    assert failure.error.startswith(f"talk.wav\\r: no such file (relative to the current directory, {tmp_path}); "
                                    "talk.wav is there: the name given ends in a carriage return (\\r)")
    assert "\n" not in failure.error and "\r" not in failure.error


def test_a_windows_list_read_in_python_is_told_of_its_mark_and_line_break(
        translators: dict[str, SpeechTranslator], talk: np.ndarray, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A list saved with a BOM and \\r\\n line ends, read with open() in Python, gives '\\ufeffu0.wav\\n' as its first
    line: the line-break hint stripped whitespace, not the mark, the Windows one dropped the mark but kept the line
    break, and the message was the bare "no such file", the mark unseen (review30z). One rule names both, and its
    advice, followed, gives the file's name; the lines after the first get the line-break hint as before."""
    st = translators["st"]
    monkeypatch.chdir(tmp_path)
    sf.write(tmp_path / "u0.wav", talk, SAMPLE_RATE)
    (tmp_path / "list.txt").write_bytes(b"\xef\xbb\xbfu0.wav\r\nu0.wav\r\n")
    with open(tmp_path / "list.txt", encoding="utf-8") as names:
        first, second = st.stream(names)
    assert first.error == ("\ufeffu0.wav\\n: no such file; u0.wav is there: the name given begins with a byte-order "
                           "mark (U+FEFF, invisible here) and ends with '\\n', as the lines of a file read in Python "
                           "keep their line break (for line in open(list), readlines()): strip it, then drop the mark "
                           "(name.strip().replace('\\ufeff', ''))")
    assert second.error.startswith("u0.wav\\n: no such file; u0.wav is there: the name given ends with '\\n'")
    with open(tmp_path / "list.txt", encoding="utf-8") as names:
        assert [line.strip().replace("\ufeff", "") for line in names] == ["u0.wav", "u0.wav"]  # the advice


@pytest.mark.slow
def test_a_url_given_as_an_input_is_named_as_one(translators: dict[str, SpeechTranslator], talk: np.ndarray,
                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`translate(["https://host/a.wav"])` was "https:/host/a.wav: no such file (relative to the current directory
    ...)": the name not as given and no word that sate reads local files (thirty-first hostile pass). A file://
    URL is told its path, and the advice, followed, translates; a local folder named like a scheme is read as ever."""
    st = translators["st"]
    monkeypatch.chdir(tmp_path)
    sf.write(tmp_path / "talk.wav", talk, SAMPLE_RATE)
    with pytest.raises(SateError) as url:
        st.translate(["https://example.com/talk.wav"])
    assert str(url.value) == ("https://example.com/talk.wav: a URL, not a file: sate reads local files; download it "
                              "first (urllib.request.urlretrieve(url, name), or curl -o NAME URL) and give the file")
    (s3,) = st.stream([Path("s3://bucket/talk.flac")])  # as `sate translate` gives it: a Path, its // collapsed
    assert s3.error == "s3:/bucket/talk.flac: a URL, not a file: sate reads local files; download it first and give " \
                       "the file"
    with pytest.raises(SateError) as local:
        st.translate([(tmp_path / "talk.wav").as_uri()])
    assert str(local.value) == f"{(tmp_path / 'talk.wav').as_uri()}: a file:// URL, not a file's path: give its " \
                               f"path ({tmp_path / 'talk.wav'})"
    advised = str(local.value).rsplit("(", 1)[1].rstrip(")")
    expected = st.translate(["talk.wav"])[0].segments
    assert st.translate([advised])[0].segments == expected
    (tmp_path / "http:" / "host").mkdir(parents=True)
    sf.write(tmp_path / "http:" / "host" / "talk.wav", talk, SAMPLE_RATE)
    assert st.translate(["http://host/talk.wav"])[0].segments == expected


def test_one_feature_matrix_given_where_a_list_goes_is_told_to_pass_a_list(translators: dict[str, SpeechTranslator],
                                                                         talk: np.ndarray) -> None:
    """`decode_features(st.features(samples))` read the matrix row by row: "feats[0]: expected an array of shape
    (T, 80), got (80,)", no word of the list it wants (thirty-first hostile pass); the advice, followed, decodes, and
    a stacked (N, T, 80) array is still N matrices."""
    st = translators["st"]
    feats = st.features(talk[:SAMPLE_RATE // 2])
    for one in (feats, torch.from_numpy(feats)):
        with pytest.raises(SateError) as single:
            st.decode_features(one)
        assert str(single.value) == f"feats: one array of shape {feats.shape}, not a list of them: pass it in a list " \
                                    "([feats])"
    assert st.decode_features([feats]) == st.decode_features(np.stack([feats]))


def test_ragged_waveforms_in_a_numpy_object_array_are_a_list_of_them() -> None:
    """Waveforms of different lengths held in a numpy object array (ragged, one dimension) decoded before the
    one-array advice (thirty-first hostile pass) and were then refused as "one array, not a list" (review31z)."""
    from sate.decode.api_args import features

    waves = np.empty(2, dtype=object)
    waves[0], waves[1] = np.zeros(1600, dtype=np.float32), np.ones(2000, dtype=np.float32) / 4
    got = features(waves, None, 1600)
    assert [w.shape for w in got] == [(1600,), (2000,)]
    with pytest.raises(SateError, match=r"^feats: one array of shape \(2000,\), not a list of them"):
        features(waves[1], None, 1600)
