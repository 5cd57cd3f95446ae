"""Drawing text that matplotlib's own font lacks: Chinese and Japanese tokens, model and folder names.

Matplotlib ships DejaVu Sans alone, which has no CJK characters: an en-zh model's heatmap rows, or a model folder
named in Chinese, were drawn as empty boxes, with one `UserWarning: Glyph 35793 (...) missing from font(s) DejaVu
Sans.` per character from deep inside matplotlib, and its source line (twenty-eighth hostile pass). A figure is now
drawn with the CJK fonts installed here as fallbacks (found on disk, so one installed since matplotlib cached its
font list counts too), and what no font draws is said in one line.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import warnings
from collections.abc import Callable
from typing import TypeVar

from sate.errors import one_line

T = TypeVar("T")
# file names of the CJK fonts of common distributions (Noto/Source Han, WenQuanYi, AR PL, Droid Sans Fallback), the
# Japanese IPA, Takao and VL Gothic, Korean Nanum, and macOS's and Windows' own (PingFang, Hiragino, YaHei, Meiryo ...)
CJK_FILES = re.compile(r"cjk|sourcehan|wqy|uming|ukai|droidsansfallback|notosans(sc|tc|jp|kr)|^ipa(ex)?[gm]p?\.|takao"
                       r"|vl-?p?gothic|nanum|pingfang|hiragino|^msyh|^simhei|^simsun|meiryo|^msgothic|^malgun",
                       re.IGNORECASE)
GLYPH = re.compile(r"Glyph (\d+) .*missing from font")
ADVICE = "install a font that has them (Noto Sans CJK: `apt install fonts-noto-cjk`) and run again"
# Han, kana, Hangul, CJK punctuation and full-width forms: what a CJK font draws (and the advice above is for)
CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff"
                 r"\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]")


def _cjk_families() -> list[str]:
    """The families of the CJK fonts on this machine, added to matplotlib's list where its cache lacks them."""
    from matplotlib import font_manager  # heavy: matplotlib, for plots only

    known = {entry.fname for entry in font_manager.fontManager.ttflist}
    families = []
    for path in sorted(font_manager.findSystemFonts()):
        if CJK_FILES.search(path.rsplit("/", 1)[-1]) is None:
            continue
        try:
            if path not in known:
                font_manager.fontManager.addfont(path)
            families.append(font_manager.FontProperties(fname=path).get_name())
        except (OSError, RuntimeError, ValueError):  # a font file it cannot read is no fallback
            continue
    return list(dict.fromkeys(families))


def drawn(draw: Callable[[], T], what: str) -> T:
    """``draw()`` (a figure drawn and saved) with the installed CJK fonts as fallbacks; characters no font has are
    named in one note on standard error instead of matplotlib's warning per character."""
    import matplotlib  # heavy: matplotlib, for plots only

    first = matplotlib.rcParams["font.family"]
    # a fallback font of one weight only (WenQuanYi Zen Hei is 500) was "findfont: Failed to find font weight normal
    # for WenQuanYi Zen Hei, now using 500." per text drawn, logged by matplotlib
    logger = logging.getLogger("matplotlib.font_manager")
    level = logger.level
    logger.setLevel(logging.ERROR)
    with contextlib.ExitStack() as stack, warnings.catch_warnings(record=True) as caught:
        stack.callback(logger.setLevel, level)
        warnings.simplefilter("always")
        families = _cjk_families()
        with matplotlib.rc_context({"font.family": [*first, *families]} if families else {}):
            result = draw()
    missing = dict.fromkeys(chr(int(m.group(1))) for w in caught if (m := GLYPH.search(str(w.message))))
    for w in caught:  # any other warning as it was
        if GLYPH.search(str(w.message)) is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    cjk = [c for c in missing if CJK.match(c)]
    if cjk:
        print(f"note: {one_line(what)}: no font here draws {_shown(cjk)}, drawn as empty boxes; {ADVICE}",
              file=sys.stderr)
    if other := [c for c in missing if not CJK.match(c)]:  # Tamil, Thai, emoji: a CJK font has none of them
        print(f"note: {one_line(what)}: the fonts matplotlib draws with here have no {_shown(other)}, drawn as empty "
              "boxes", file=sys.stderr)
    return result


def _shown(characters: list[str]) -> str:
    """The first characters of many, and how many there are."""
    return f"{''.join(characters[:20])}{'…' if len(characters) > 20 else ''} ({len(characters)} characters)"
