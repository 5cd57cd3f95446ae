"""Signs of a decoder that has not learnt to stop or to move on: short outputs and repeated tokens.

An undertrained model ends too early or loops ("Der Der Der ..."); BLEU alone hides which. The
length ratio is sacreBLEU's (hypothesis over reference length in 13a tokens, what its brevity
penalty uses; in characters for Chinese and Japanese, which 13a does not split); a loop is a word
repeated `LOOP` or more times in a row (words split on whitespace,
compared without the punctuation around them, so "Der Der Der Der." is one; a word of punctuation
alone, such as "...", is no word and breaks a run). Chinese and Japanese are written without spaces, so a run of
their characters is one such "word" whatever it holds: there a loop is a unit of one to eight characters (a word or
a phrase of theirs) repeated `LOOP` or more times in a row ("我们我们我们我们"); and punctuation after one of their
characters ends a word as a space does, so "我们，我们，我们，我们" is a loop as "we, we, we, we" is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from sate.scoring.score import unspaced_script

LOOP = 4
# Han and kana (the scripts `sate.scoring.score.unspaced_script` tells), not the katakana middle dot (・, punctuation:
# "・・・・" is an ellipsis): one to eight of them, a word or a phrase, then the same again
UNSPACED_CHAR = "[\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff]"
# not begun by the prolonged-sound mark or a small kana, which lengthen a sound as "sooooo" does, no loop in English
# ("すごーーーーい", "あっっっっ"); "パーパーパーパー" is one, of the unit "パー"
LENGTHENING = "\u30fc\u3041\u3043\u3045\u3047\u3049\u3063\u30a1\u30a3\u30a5\u30a7\u30a9\u30c3"
UNSPACED_UNIT = f"(?![{LENGTHENING}]){UNSPACED_CHAR}{{1,8}}?"
# punctuation (or a symbol) after a Chinese or Japanese character ends a word of theirs, as a space ends an English
# one: "我们，我们，我们，我们" is four words, as "we, we, we, we" is ("1.1.1.1" stays one)
UNSPACED_WORD_END = re.compile(f"(?<={UNSPACED_CHAR})[^\\w\\s]+")


def _unpunctuated(word: str) -> str:
    """``word`` without the punctuation and symbols around it, of any script (Unicode's P and S categories, which
    hold ASCII's punctuation): "„Der“", "…", "—" and "«" are punctuation as "..." is."""
    start, end = 0, len(word)
    while start < end and unicodedata.category(word[start])[0] in "PS":
        start += 1
    while end > start and unicodedata.category(word[end - 1])[0] in "PS":
        end -= 1
    return word[start:end]


def _words(text: str) -> list[str]:
    """TEXT's words: split on whitespace, and after punctuation that follows a Chinese or Japanese character (a
    loop of theirs separated by commas, "我们，我们，我们，我们", was one word, so no loop; twenty-seventh hostile
    pass). A word of punctuation alone stays one, and breaks a run."""
    words = []
    for word in text.split():
        parts = [part for part in UNSPACED_WORD_END.split(word) if part]
        words.extend(parts or [word])
    return words


def has_loop(text: str, times: int = LOOP) -> bool:
    """Whether some token occurs `times` or more times in a row, or a unit of Chinese or Japanese characters does
    inside one (a looping zh or ja output is one whitespace token: its share of loops was 0%, twenty-seventh hostile
    pass)."""
    if re.search(f"({UNSPACED_UNIT})\\1{{{times - 1},}}", text):
        return True
    run, previous = 0, None
    for word in _words(text):
        token = _unpunctuated(word)
        if not token:
            run, previous = 0, None
            continue
        run = run + 1 if token == previous else 1
        if run >= times:
            return True
        previous = token
    return False


def loop_share(hyps: Sequence[str], times: int = LOOP) -> float:
    """The share of outputs (0-1) that loop (`has_loop`)."""
    return sum(has_loop(h, times) for h in hyps) / len(hyps) if hyps else 0.0


def length_unit(refs: Sequence[str]) -> str:
    """What `length_ratio` counts for ``refs``, recorded in results.json as ``length_unit``: "characters" for Chinese
    or Japanese references, else "13a tokens". Rows evaluated before the twenty-ninth pass counted 13a tokens for
    Chinese and Japanese too and recorded no unit: `sate report` counts theirs again from their files (fix29r)."""
    return "13a tokens" if unspaced_script(refs) is None else "characters"


def share_text(share: float, digits: int = 1) -> str:
    """A share (0-1) in percent to ``digits`` decimals, never rounded to none or to all where it is neither: one
    output of 2,000 that loops was "0.0%" in `sate evaluate`'s line and "0%" in `sate report`'s table, read as none
    (33rd hostile pass); "<0.1%" and ">99.9%" say it."""
    text = f"{share:.{digits}%}"
    step = 10.0 ** -digits
    if 0 < share and float(text[:-1]) == 0:
        return f"<{step:.{digits}f}%"
    if share < 1 and float(text[:-1]) == 100:
        return f">{100 - step:.{digits}f}%"
    return text


def length_line(ratio: float, unit: str, share: float) -> str:
    """`sate evaluate`'s line of the length ratio and the loops. For Chinese and Japanese it names its unit: the BLEU
    line just above it says "ratio = 1.000" (13a tokens, BLEU's brevity penalty) where this one said 0.235 of the
    same outputs, two ratios a few lines apart that disagreed without a word (review29r)."""
    how = "" if unit == "13a tokens" else f", in {unit}; the BLEU line's ratio counts 13a tokens"
    return (f"length ratio (hypothesis / reference{how}) {ratio:.3f}; outputs with a word (zh, ja: a unit of 1-8 "
            f"characters) repeated {LOOP}+ times in a row: {share_text(share)}")


def length_ratio(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Hypothesis over reference length in sacreBLEU's 13a tokens (its BLEU "ratio"); for Chinese or Japanese
    references, in their characters (sacreBLEU's zh tokens; char for Japanese, whose ja-mecab needs MeCab). 13a
    splits unspaced text at punctuation only, so a Chinese output a third as long as its references, or one without
    their commas, had a ratio of 1.000, as a whole one had (twenty-ninth hostile pass)."""
    from sacrebleu.metrics import BLEU  # slow: sacrebleu (0.3 s)

    unspaced = unspaced_script(refs)
    tokenize = "13a" if unspaced is None else "zh" if unspaced == "Chinese" else "char"
    score = BLEU(tokenize=tokenize).corpus_score(list(hyps), [list(refs)])
    return score.sys_len / score.ref_len if score.ref_len else 0.0
