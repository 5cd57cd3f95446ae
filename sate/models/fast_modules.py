"""Faster stand-ins for ESPnet's modules in training, swapped in after a model is built.

A profile of the demo SATE model's training step on the CPU (BENCHMARKS.md, "Training step") put most of
what is not a matrix product or a convolution in dropout and in the passes around it. The swap gives:

- every plain `nn.Dropout` a cheaper CPU mask (`sate.models.fast_dropout`);
- ESPnet's Swish (``x * sigmoid(x)``, two kernels forward, three backward) PyTorch's `nn.SiLU` (one each);
- each block its own ReLU: ESPnet's feed-forward blocks default to one ``ReLU()`` (a default argument) shared by
  every model of the process, so a teacher's ``eval()`` put the student's blocks in eval mode too (29th hostile pass);
- ESPnet's attention a fused path on a GPU and a lean one on the CPU (`sate.models.fast_attention`);
- ESPnet's layers and feed-forward module a training forward with dropout, rescaling and residual add in
  one operation (`sate.models.fast_layers`).

Classes are swapped on the instances (``__class__``), the subclasses own no parameter of their own, so state
dicts and ESPnet weight loading are unchanged. In eval mode every module computes exactly what ESPnet's
does; in training the results are the same up to float rounding and the random stream.
"""

from __future__ import annotations

from espnet.nets.pytorch_backend.conformer.swish import Swish
from torch import nn

from sate.models.fast_attention import ATTENTION_CLASSES
from sate.models.fast_dropout import FastDropout
from sate.models.fast_layers import LAYER_CLASSES, FastDepthwiseConv1d, is_depthwise

_SUBCLASSES = {**ATTENTION_CLASSES, **LAYER_CLASSES}


def use_fast_modules(model: nn.Module) -> nn.Module:
    """Swap, in place, every plain `nn.Dropout` for `FastDropout`, ESPnet's Swish for `nn.SiLU`, a ReLU (shared
    between models by ESPnet's default argument) for one of the block's own, and ESPnet's attention, layer and
    feed-forward classes for their faster subclasses. Returns the model."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.Dropout:
                setattr(parent, name, FastDropout(child.p, child.inplace))
            elif type(child) is Swish:
                setattr(parent, name, nn.SiLU())
            elif type(child) is nn.ReLU:
                setattr(parent, name, nn.ReLU(child.inplace))
            elif type(child) in _SUBCLASSES:
                child.__class__ = _SUBCLASSES[type(child)]  # same state, a faster forward
            elif is_depthwise(child):
                child.__class__ = FastDepthwiseConv1d
    return model
