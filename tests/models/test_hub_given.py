"""A hub section's ``hub`` given in the config instead of read from the directory (24th hostile pass)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.errors import SateError
from sate.models.config import resolve_config, resolve_in_file


def test_a_given_marian_hub_is_whole(marian_dir: Path) -> None:
    """textual.hub given in part (`--set model.textual.hub.d_model=8`) was a KeyError traceback ('encoder_layers');
    a whole one, as a model file or `sate config` stores it, still resolves without the directory.
    (tests/models/test_whisper_acoustic.py::test_a_given_hub_is_whole: the acoustic side.)"""
    model = {"textual": {"type": "hf_marian", "path": str(marian_dir)}, "decoder": {"type": "hf_marian"}}
    conf = resolve_config("mt", model)
    stored = conf.to_dict()
    stored["textual"]["path"] = None
    assert resolve_config("mt", stored).textual.hub == conf.textual.hub
    with pytest.raises(SateError, match=r"^model config: textual.hub has no encoder_layers, encoder_attention_heads, "
                                        r"encoder_ffn_dim and 12 more: it is filled from textual.path when left out"):
        resolve_config("mt", model | {"textual": {"type": "hf_marian", "hub": {"d_model": 8}}})
    stored["textual"]["hub"] = stored["textual"]["hub"] | {"encoder_layers": 0}
    with pytest.raises(SateError, match=r"^model config: textual.hub.encoder_layers is 0; expected a whole number"):
        resolve_config("mt", stored)


def test_a_training_hub_is_compared_on_its_shaping_keys_alone(
        tmp_path: Path, marian_dir: Path, speech_hub_dir: Callable[[str, str], Path]) -> None:
    """A training config's hub beside its path's folder is compared on the keys that shape the weights: its
    dropouts, layer_norm_eps and do_normalize (an hf_* model's are set only there) and Marian's positions (a table
    computed, not a weight) were refused as differing from the folder, though the weights load with them; a folder
    whose config files are gone, with the hub given, was refused too (twenty-eighth hostile pass, review)."""
    folder = speech_hub_dir("hf_wav2vec2", "group")
    stored = resolve_config("asr", {"acoustic": {"type": "hf_wav2vec2", "path": str(folder)}}).to_dict()
    stored["acoustic"]["hub"] |= {"layer_drop": 0.05, "dropout": 0.1, "attention_dropout": 0.2,
                                  "layer_norm_eps": 1e-6, "do_normalize": not stored["acoustic"]["hub"]["do_normalize"]}
    assert resolve_in_file("asr", stored, "f.yaml").acoustic.hub["layer_drop"] == 0.05  # type: ignore[index]
    marian = resolve_config("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                                   "decoder": {"type": "hf_marian"}}).to_dict()
    marian["textual"]["hub"] |= {"max_position_embeddings": 256, "activation_function": "gelu"}
    assert resolve_in_file("mt", marian, "f.yaml").textual.hub["max_position_embeddings"] == 256  # type: ignore[index]
    for gone in ("config.json", "preprocessor_config.json"):
        copy = tmp_path / gone
        shutil.copytree(folder, copy)
        (copy / gone).unlink()
        assert resolve_in_file("asr", stored | {"acoustic": stored["acoustic"] | {"path": str(copy)}}, "f.yaml")
    stored["acoustic"]["hub"]["ffn"] += 1  # a size is still compared
    with pytest.raises(SateError, match=rf"^f.yaml: model.acoustic.hub.ffn is \d+ but model.acoustic.path "
                                        rf"\({re.escape(str(folder))}\) says \d+; leave model.acoustic.hub out"):
        resolve_in_file("asr", stored, "f.yaml")


def test_the_hub_refusal_names_every_key_to_leave_out(marian_dir: Path, whisper_hub_dir: Path) -> None:
    """A config saved from `sate config` for one model and pointed at another was refused for its hub, then, the
    hub left out as advised, for each size of the section the old model gave, one a try: four tries for a Whisper,
    more for a Marian (twenty-eighth hostile pass, review). One line now names them all, and following it works."""
    saved = resolve_config("asr", {"acoustic": {"type": "whisper", "path": str(whisper_hub_dir)}}).to_dict()
    hub = saved["acoustic"]["hub"]
    other = saved | {"acoustic": saved["acoustic"] | {"layers": hub["layers"] + 1, "heads": hub["heads"] * 2,
                                                      "hub": hub | {"d_model": 48, "layers": hub["layers"] + 1}}}
    with pytest.raises(SateError) as err:
        resolve_in_file("asr", other, "f.yaml")
    assert str(err.value) == (
        f"f.yaml: model.acoustic.hub.d_model is 48 and model.acoustic.hub.layers is {hub['layers'] + 1} but "
        f"model.acoustic.path ({whisper_hub_dir}) says 32 and {hub['layers']}; leave out model.acoustic.hub, "
        "model.acoustic.layers and model.acoustic.heads (they are filled from model.acoustic.path)")
    followed = {key: value for key, value in other["acoustic"].items() if key not in ("hub", "layers", "heads")}
    assert resolve_in_file("asr", other | {"acoustic": followed}, "f.yaml").acoustic.layers == hub["layers"]
    with pytest.raises(SateError, match=r"^f.yaml: model.acoustic.layers is \d+ and model.acoustic.heads is \d+ but "
                                        r"model.acoustic.hub \(.*\) says \d+ and \d+; a hub model's sizes come from "
                                        r"its directory \(leave model.acoustic.layers and model.acoustic.heads out\)$"):
        resolve_in_file("asr", other | {"acoustic": followed | {"layers": 9, "heads": 8}}, "f.yaml")
    marian = resolve_config("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                                   "decoder": {"type": "hf_marian"}}).to_dict()
    marian["textual"]["hub"] = marian["textual"]["hub"] | {"decoder_ffn_dim": 7, "encoder_layers": 9}
    marian["textual"]["layers"], marian["decoder"]["ffn"], marian["d_model"] = 9, 7, marian["d_model"] * 2
    with pytest.raises(SateError, match=r"^f.yaml: model.textual.hub.encoder_layers is 9 and "
                                        r"model.textual.hub.decoder_ffn_dim is 7 but model.textual.path \(.*\) says "
                                        r"\d+ and \d+; leave out model.textual.hub, model.d_model, "
                                        r"model.textual.layers and model.decoder.ffn \(they are filled from "
                                        r"model.textual.path\)$"):
        resolve_in_file("mt", marian, "f.yaml")
    # the model section's own d_model named as the file spells it: "leave d_model out" named a key the training
    # config does not have (thirty-second hostile pass); a model file's config keeps its own spelling
    del marian["textual"]["hub"]
    with pytest.raises(SateError, match=r"^f.yaml: model.d_model is \d+, model.textual.layers is 9 and "
                                        r"model.decoder.ffn is 7 but model.textual.hub \(.*\) says \d+, \d+ and \d+; "
                                        r"a hub model's sizes come from its directory \(leave model.d_model, "
                                        r"model.textual.layers and model.decoder.ffn out\)$"):
        resolve_in_file("mt", marian, "f.yaml")
    with pytest.raises(SateError, match=r"^model config: d_model is \d+, textual.layers is 9 and decoder.ffn is 7 "):
        resolve_config("mt", marian)
    del marian["textual"]["layers"], marian["decoder"]["ffn"], marian["d_model"]
    assert resolve_in_file("mt", marian, "f.yaml").textual.layers > 0
