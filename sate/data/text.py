"""Source-text normalisation: the form CTC and the MT source are trained on (``src_norm``).

SATE's soft adaptor maps CTC posteriors onto the MT source embeddings, so the acoustic
encoder's CTC targets and the MT source must be the *same* text form. The paper uses lowercased
English without punctuation; this module is the single definition of that form.

Rules, in order:

1. Sound-event tags in parentheses or brackets, e.g. ``(Applause)``, ``(Laughter)``, ``[music]``,
   and the markers transcripts write in angle brackets or braces (a Kaldi transcript's ``<unk>``, ``<NOISE>``,
   ``{BREATH}``; a subtitle's ``<i>``: a closed list, `SOUND_TAG`)
   are removed: nobody says them.
2. Unicode NFKC, then lowercase. Curly apostrophes, an acute accent and a prime typed for one (``don´t``) become
   ``'``.
3. An apostrophe between two letters is kept (``don't``, ``it's``, ``rock'n'roll``): it is part
   of the spoken word and removing it would merge distinct words (``we're`` / ``were``).
4. Dashes, slashes and punctuation between two digits become a space (``well-known`` ->
   ``well known``, ``3.5`` -> ``3 5``, ``9/11`` -> ``9 11``): they separate spoken words.
5. All other punctuation and symbols (Unicode categories P* and S*, e.g. ``. , ? ! " % ♫``) are
   deleted (``U.S.`` -> ``us``, ``Mr. Smith`` -> ``mr smith``), and so are control and format characters
   (Cc and Cf: a soft hyphen, a zero-width space, a byte-order mark, an escape), which nobody says either.
6. Whitespace is collapsed; the result has no leading or trailing spaces.
"""

from __future__ import annotations

import re
import unicodedata

# (Applause), [music], and the markers real transcripts write in angle brackets or braces, a closed list, any case
# (TED-LIUM's and Kaldi's `<unk>`, `<NOISE>`, `<SPOKEN_NOISE>`, `<sil>`, `{BREATH}`, `{SMACK}`; a subtitle's `<i>`,
# `</i>`): rule 1. `<unk>` was kept as the word "unk" that CTC learnt to spell for the words TED-LIUM's transcribers did
# not know (33rd hostile pass). Any one word in brackets took words from MT text too (`press the <Tab> key`,
# `vector<int> v`, `the set {x}`: review33m), so only these go (a subtitle's tags in lower case: `press <B>` keeps its
# key); `x < y and y > z` keeps its words.
MARKERS = ("unk|noise|spoken[_-]noise|sil|silence|v-noise|vocalized[_-]noise|laughter|laugh|breath|cough|music|smack|"
           "lipsmack")
SOUND_TAG = re.compile(rf"\([^()]*\)|\[[^\[\]]*\]|</?(?:{MARKERS}|(?-i:[ibu]))>|\{{(?:{MARKERS})\}}", re.IGNORECASE)
# Han and kana, the characters of Chinese and Japanese, which are written without spaces between words: the body of
# a regex character class (`[{HAN_KANA}]`), for the readers that take each such character as a word of its own
HAN_KANA = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u2032": "'"})
# An acute accent typed for an apostrophe (`don´t`, as German and Spanish keyboards offer it: common in web text, the
# MT text's English side), which NFKC makes a space and a combining accent: "don ́t" was two words, the second opening
# with an accent on nothing, a piece of the source vocabulary (33rd hostile pass); a prime (`we′re`) was deleted, and
# merged the word with another ("were"). Each is the apostrophe it stands for, the accent before NFKC (replaced, not
# translated: str.translate took 4 µs a line).
ACUTE = "\u00b4"
_SPACE = re.compile(r"\s+")


# Candidates for deletion: anything that is neither a word character nor space, and "_".
_NON_WORD = re.compile(r"[^\w\s]|_")


def _replace(match: re.Match[str]) -> str:
    ch = match.group()
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf"):  # `infor\u00admation` (a soft hyphen) was a word of its own, and a transcript of
        return ""  # escapes alone was kept as a source to learn from (28th hostile pass)
    if category[0] not in "PS":
        return ch  # e.g. a combining mark
    text, i = match.string, match.start()
    prev = text[i - 1] if i > 0 else " "
    nxt = text[i + 1] if i + 1 < len(text) else " "
    if ch == "'" and prev.isalpha() and nxt.isalpha():
        return ch
    if category == "Pd" or ch in "/\\" or (prev.isdigit() and nxt.isdigit()):
        return " "
    return ""


def normalize_source(text: str) -> str:
    """Lowercase, tag-free, punctuation-free English with collapsed whitespace (see module doc)."""
    text = SOUND_TAG.sub(" ", text.replace(ACUTE, "'") if ACUTE in text else text)
    text = unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)
    return _SPACE.sub(" ", _NON_WORD.sub(_replace, text)).strip()
