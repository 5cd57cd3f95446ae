"""The typed config machinery: a section read from YAML and a section built in code are checked alike."""

from __future__ import annotations

import math

import pytest
import yaml

from sate.decode.options import DecodeOptions, decode_options
from sate.errors import SateError
from sate.models.config import AcousticConfig
from sate.settings import helps, read
from sate.train.schema import BatchConfig, TrainerConfig, TrainingConfig


@pytest.mark.parametrize(("given", "message"), [
    ({"trainer": {"max_epochs": 0}}, "f.yaml: trainer.max_epochs must be at least 1, got 0"),
    ({"trainer": {"max_epoch": 3}}, "f.yaml: unknown config key 'trainer.max_epoch' (known here: "
                                    "checkpoint_every_minutes, checkpoint_every_steps, keep_best"),
    ({"optim": 3}, "f.yaml: optim must be a mapping, got 3"),
    ({"batch": {"global": 1.5}}, "f.yaml: batch.global must be an integer, got 1.5"),
    ({"task": "asr", "data": {"mt_text": [["a", "b"]]}}, "f.yaml: data.mt_text applies to task mt only"),
])
def test_errors_name_the_file_and_the_dotted_key(given: dict, message: str) -> None:
    with pytest.raises(SateError) as error:
        read(TrainingConfig, given, "f.yaml: ")
    assert str(error.value).startswith(message)


def test_a_section_built_in_code_is_checked_as_one_read_from_yaml() -> None:
    with pytest.raises(SateError, match="max_epochs must be at least 1, got 0"):
        TrainerConfig(max_epochs=0)
    with pytest.raises(SateError, match="lenpen must be a finite number, got nan"):
        DecodeOptions(lenpen=math.nan)
    with pytest.raises(SateError, match=r"nbest must be between 1 and the beam \(2\), got 3"):
        decode_options({"beam": 2, "nbest": 3}, "--decode")


def test_the_plain_dict_uses_the_yaml_keys_and_reads_back() -> None:
    config = read(TrainingConfig, {"task": "mt", "batch": {"global": 40000}, "optim": {"lr": 1}})
    assert config.batch == BatchConfig(global_=40000) and config.optim.lr == 1.0
    stored = config.to_dict()
    assert stored["batch"] == {"per_device": 20000, "global": 40000, "mt_tokens": 2000}
    assert read(TrainingConfig, stored) == config
    assert helps(TrainingConfig)["batch.global"].startswith("what one update sees")


def test_decoding_options_of_a_dict_era_pack_read_back() -> None:
    """The decode section sate.yaml held before the typed options: the defaults, written out."""
    written = {"beam": 5, "lenpen": 1.0, "length_bonus": 0.0, "min_len_ratio": 0.0, "max_len_ratio": 1.5, "nbest": 1}
    assert decode_options(written, "sate.yaml") == DecodeOptions() and DecodeOptions().to_dict() == written
    with pytest.raises(SateError, match="sate.yaml: unknown decoding option 'beem'"):
        decode_options({"beem": 3}, "sate.yaml")
    with pytest.raises(SateError, match="sate.yaml: beam must be an integer, got '5'"):
        decode_options({"beam": "5"}, "sate.yaml")


def test_a_key_yaml_reads_as_null_or_a_boolean_is_named_as_the_file_spells_it() -> None:
    """`null: 2` in a pack's decode section was "unknown decoding option 'None'", `yes: 1` 'True': names the
    file does not hold."""
    for doc, named in (("null: 2", "null"), ("~: 2", "null"), ("yes: 1", "true"), ("off: 1", "false"),
                       ("2: 3", "2")):
        with pytest.raises(SateError, match=f"^sate.yaml: unknown decoding option '{named}' "):
            decode_options(yaml.safe_load(doc), "sate.yaml")
    with pytest.raises(SateError, match="unknown config key 'optim.null'"):
        read(TrainingConfig, {"task": "mt", "optim": {None: 1}})


def test_a_typed_dict_field_reads_a_mapping_and_refuses_anything_else() -> None:
    """``acoustic.hub`` is a `SpeechHub` (a TypedDict): YAML gives it as a mapping, kept as given."""
    hub = {"model_type": "wav2vec2", "layers": 2}
    assert read(AcousticConfig, {"type": "hf_wav2vec2", "hub": hub}).hub == hub
    assert read(AcousticConfig, {}).hub is None
    with pytest.raises(SateError, match="m: hub must be a mapping or null, got 'wav2vec2'"):
        read(AcousticConfig, {"type": "hf_wav2vec2", "hub": "wav2vec2"}, "m: ")


def test_integers_in_a_list_of_floats_are_floats_as_a_float_keys_integer_is() -> None:
    """`optim.betas: [0, 0.98]` passed the config and was torch's "betas must be either both floats or both
    Tensors" traceback once training had begun (thirty-second hostile pass): docs/training.md says an integer
    stands for a float."""
    import torch  # heavy: torch's Adam, the reader of optim.betas

    optim = read(TrainingConfig, {"optim": {"betas": [0, 0.98]}}).optim
    assert optim.betas == [0.0, 0.98] and all(type(b) is float for b in optim.betas)
    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], betas=tuple(optim.betas))
    with pytest.raises(SateError, match=r"optim.betas must be two numbers in \[0, 1\)"):
        read(TrainingConfig, {"optim": {"betas": [True, 0.9]}})
