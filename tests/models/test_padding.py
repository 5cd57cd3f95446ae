"""An utterance's acoustic encoding must not depend on what it is batched with."""

from __future__ import annotations

import pytest
import torch

from sate.models.acoustic import AcousticEncoder
from sate.models.config import AcousticConfig


@pytest.mark.parametrize("kind", ["conformer", "transformer"])
@pytest.mark.parametrize("channels", [None, 8])
def test_batched_output_equals_alone(kind: str, channels: int | None) -> None:
    torch.manual_seed(0)
    conf = AcousticConfig(type=kind, layers=2, heads=2, ffn=32, kernel=5, frontend_channels=channels, dropout=0.0)
    encoder = AcousticEncoder(conf, d_model=16).eval()
    lengths = torch.tensor([200, 317, 123])  # 200 frames: ESPnet alone gives 49 frames, padded 50
    feats = torch.randn(3, 317, 80)
    with torch.no_grad():
        batched, batched_lengths = encoder(feats, lengths)
        for b, n in enumerate(lengths.tolist()):
            alone, alone_length = encoder(feats[b : b + 1, :n], lengths[b : b + 1])
            assert int(batched_lengths[b]) == int(alone_length) == ((n - 1) // 2 - 1) // 2
            torch.testing.assert_close(batched[b, : int(alone_length)], alone[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("kind", "norm"), [("hf_wav2vec2", "group"), ("hf_wav2vec2", "layer"),
                                            ("hf_hubert", "group"), ("hf_wavlm", "group")])
def test_hub_encoder_batched_output_equals_alone(kind: str, norm: str, speech_hub_dir) -> None:  # noqa: ANN001
    """The same rule for the hub encoders on waveforms, group-norm models (transformers' own depend on padding)
    and WavLM (torchaudio's takes no padding mask) included."""
    from sate.models import build_model
    from sate.models.hub.load import load_hub_parts

    torch.manual_seed(0)
    model = build_model("asr", {"d_model": 8, "acoustic": {"type": kind, "path": str(speech_hub_dir(kind, norm))}},
                        10, 10).eval()
    load_hub_parts(model, [], [], log=lambda _: None)
    lengths = torch.tensor([4000, 2600, 1500])
    waves = torch.randn(3, 4000) * 0.1 + 0.05
    with torch.no_grad():
        batched, batched_lengths = model.acoustic(waves, lengths)
        for b, n in enumerate(lengths.tolist()):
            alone, alone_length = model.acoustic(waves[b:b + 1, :n], lengths[b:b + 1])
            assert int(batched_lengths[b]) == int(alone_length) == alone.size(1)
            torch.testing.assert_close(batched[b, :alone.size(1)], alone[0], atol=1e-5, rtol=1e-5)


def test_whisper_batched_output_equals_alone(whisper_hub_dir) -> None:  # noqa: ANN001
    """acoustic.type whisper: the log-mel front-end, Whisper's encoder and the projection, on waveforms."""
    from sate.models import build_model
    from sate.models.hub.load import load_hub_parts

    torch.manual_seed(0)
    model = build_model("asr", {"d_model": 8, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir)}},
                        10, 10).eval()
    load_hub_parts(model, [], [], log=lambda _: None)
    lengths = torch.tensor([16000, 9000, 4321])
    waves = torch.randn(3, 16000) * 0.1
    with torch.no_grad():
        batched, batched_lengths = model.acoustic(waves, lengths)
        for b, n in enumerate(lengths.tolist()):
            alone, alone_length = model.acoustic(waves[b:b + 1, :n], lengths[b:b + 1])
            assert int(batched_lengths[b]) == int(alone_length) == alone.size(1) == -(-(n // 160) // 2)
            torch.testing.assert_close(batched[b, :alone.size(1)], alone[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("frames", [8, 10])
def test_a_lone_utterance_of_one_encoder_frame_trains(build, make_batch, frames: int) -> None:  # noqa: ANN001
    """A training batch of one 0.1-s utterance (8 to 10 frames: one encoder frame) was ESPnet's BatchNorm ValueError
    in the Conformer's convolution module, a traceback (28th hostile pass). It is padded as a longer neighbour in its
    batch would pad it: its length, one encoder frame, stays; the model trains with finite loss and gradients."""
    torch.manual_seed(0)
    conf = AcousticConfig(type="conformer", layers=2, heads=2, ffn=32, kernel=5, frontend_channels=8, dropout=0.0)
    encoder = AcousticEncoder(conf, d_model=16).train()
    feats, lengths = torch.randn(1, frames, 80), torch.tensor([frames])
    alone, alone_length = encoder(feats, lengths)
    padded, padded_length = encoder(torch.nn.functional.pad(feats, (0, 0, 0, 11 - frames)), lengths)  # 2 frames
    assert alone_length.tolist() == padded_length.tolist() == [1]
    assert alone.size(1) == 1  # the padding's frame is cut again: the utterance has one encoder frame
    torch.testing.assert_close(alone, padded[:, :1])
    model = build("st").train()
    out = model(make_batch(frames=(frames,)))
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and all(torch.isfinite(p.grad).all() for p in model.parameters()
                                               if p.grad is not None)


@pytest.mark.slow
@pytest.mark.parametrize("teacher_type", ["conformer", "transformer"])
def test_a_lone_utterance_of_one_encoder_frame_distils(build, make_batch, teacher_type: str) -> None:  # noqa: ANN001
    """With an ASR teacher (loss.kd.asr_weight), that lone 0.1-s utterance stopped training: the student's CTC logits
    kept the padding's frame (2 frames), the teacher's, encoded in eval mode unpadded, had 1, and KD_asr refused them
    as "ASR teacher and student disagree on CTC frames ... the teacher must have the student's acoustic front-end",
    which it had (30th hostile pass). The padding's frame is cut again after the encoder."""
    student = build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": "asr.pt"}}).train()
    student.set_teachers(asr=build("asr", seed=1, acoustic={**student.conf.acoustic.to_dict(), "type": teacher_type,
                                                            "kernel": 15}))
    out = student(make_batch(frames=(8,)))
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and out["loss_kd_asr"] > 0
    assert student.encode(make_batch(frames=(8,))["feats"], torch.tensor([8])).ctc_logits.size(1) == 1
