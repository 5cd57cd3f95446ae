"""Importing ESPnet's blocks prints nothing: ESPnet's flash-attention notice is dropped, since we never take
that path, and stdout stays clean for commands that write results there."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow  # a fresh interpreter importing torch and ESPnet: 2 s
def test_importing_the_espnet_blocks_prints_no_flash_attention_notice() -> None:
    # A fresh interpreter: in this one ESPnet's attention module is already imported.
    done = subprocess.run([sys.executable, "-c", "import sate.models.espnet_blocks"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == ""
    assert "Flash Attention" not in done.stderr
