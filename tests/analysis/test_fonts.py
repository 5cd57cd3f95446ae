"""Chinese text in the figures: an en-zh model's heatmap rows, a model folder named in Chinese."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import torch

from sate.analysis import fonts
from sate.analysis.heatmap import plot_attention
from sate.analysis.locality import LayerLocalness, plot_locality


def test_characters_no_font_has_are_one_note_not_a_warning_each(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-eighth hostile pass: each Chinese character was matplotlib's `UserWarning: Glyph 20320 (...) missing
    from font(s) DejaVu Sans.` with its source line, and nothing said what to do about the empty boxes."""
    monkeypatch.setattr(fonts, "_cjk_families", list)  # as on a machine without a CJK font
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        png = plot_attention(torch.full((2, 3), 1 / 3), ["▁你好", "</s>"], ["▁hello", None, "▁world"], "st · u1",
                             "position", "output token")
        plot_locality([LayerLocalness("翻译", "mt", "textual", 1, 0.5, 3)], 0.1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("note: st · u1: no font here draws 你好 (2 characters), drawn as empty boxes; install "
                             "a font that has them"), err
    assert err[1].startswith("note: locality.png: no font here draws 翻译 (2 characters)"), err
    assert len(err) == 2


def test_other_scripts_are_not_told_to_install_a_cjk_font(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the twenty-eighth pass: Tamil, Devanagari or Thai rows (CoVoST 2 en-ta) were told "install a font
    that has them (Noto Sans CJK ...)", advice that changed nothing when followed. The CJK font is named only for
    Han, kana and Hangul; other characters are said to be missing from the fonts drawn with."""
    monkeypatch.setattr(fonts, "_cjk_families", list)  # as on a machine without a CJK font
    plot_attention(torch.full((3, 1), 1 / 3), ["▁வணக்கம்", "▁नमस्ते", "▁日本語"], ["▁hi"], "st · u1", "position",
                   "output token")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith("note: st · u1: no font here draws 日本語 (3 characters)") and "fonts-noto-cjk" in err[0]
    assert err[1].startswith("note: st · u1: the fonts matplotlib draws with here have no வ") and "CJK" not in err[1]


@pytest.mark.parametrize("name", ["ipag.ttf", "ipaexg.ttf", "TakaoPGothic.ttf", "VL-Gothic-Regular.ttf",
                                  "NotoSansCJK-Regular.ttc", "wqy-zenhei.ttc", "msyh.ttc"])
def test_common_cjk_font_files_are_fallbacks(name: str) -> None:
    """The Japanese IPA, Takao and VL Gothic fonts were not taken for CJK fonts: a user with one installed was told
    no font here draws the characters."""
    assert fonts.CJK_FILES.search(name)
    assert not any(fonts.CJK_FILES.search(other) for other in ("DejaVuSans.ttf", "NotoSansTamil-Regular.ttf",
                                                                  "Lipa.ttf", "LiberationSans-Regular.ttf"))


def test_an_installed_cjk_font_is_a_fallback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    """A font found on disk is drawn with (here DejaVu Sans Mono stands in for a CJK font: the family list is what
    matplotlib falls back through); text the fonts have needs no note."""
    import matplotlib

    seen = []
    monkeypatch.setattr(fonts, "_cjk_families", lambda: ["DejaVu Sans Mono"])

    def draw() -> None:
        seen.append(list(matplotlib.rcParams["font.family"]))

    fonts.drawn(draw, "x.png")
    assert seen == [[*matplotlib.rcParams["font.family"], "DejaVu Sans Mono"]]
    assert capsys.readouterr().err == ""


def test_a_cjk_font_on_disk_draws_without_a_word(capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A CJK font of the system (found on disk, not yet in matplotlib's cache) draws Chinese labels: no note, no
    warning, and none of matplotlib's "findfont: Failed to find font weight normal ..." lines for a font of one
    weight. Run where such a font is installed (fonts-wqy-zenhei, fonts-noto-cjk)."""
    from matplotlib import font_manager

    found = [path for path in font_manager.findSystemFonts() if fonts.CJK_FILES.search(Path(path).name)]
    if not found:
        pytest.skip("no CJK font installed here")
    # matplotlib logs a font's missing weight once per process (its look-up is cached), and under pytest its log
    # goes to caplog, not standard error: the cache is emptied and the log read where it goes
    font_manager.FontManager._findfont_cached.cache_clear()
    caplog.set_level(logging.WARNING, logger="matplotlib.font_manager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_attention(torch.full((1, 1), 1.0), ["▁你好"], ["▁hi"], "st · u1", "position", "output token")
    captured = capsys.readouterr()
    assert captured.err == "" and "findfont" not in captured.out
    assert not [record.getMessage() for record in caplog.records if "findfont" in record.getMessage()]
