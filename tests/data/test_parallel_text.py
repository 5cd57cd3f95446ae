"""Parallel text read as a stream: plain and gzip files, aligned pairs, errors naming file and line, a sample."""

from __future__ import annotations

import gzip
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from sate.data.parallel_text import (
    Pair,
    check_pair_order,
    check_pairs,
    check_target_language,
    count_lines,
    model_target,
    read_pairs,
    reservoir_sample,
)
from sate.errors import SateError


def write(path: Path, text: str, gz: bool = False) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_plain_and_gzip_give_the_same_pairs(tmp_path: Path) -> None:
    en_text, de_text = "\ufeffHello there. \r\n\n  Bye!\n", "Hallo.\r\nLeer\nTschüss!"
    plain = (write(tmp_path / "a.en", en_text), write(tmp_path / "a.de", de_text))
    zipped = (write(tmp_path / "b.en.gz", en_text, gz=True), write(tmp_path / "b.txt", de_text, gz=True))
    want = [Pair(0, 0, "Hello there.", "Hallo."), Pair(0, 1, "", "Leer"), Pair(0, 2, "Bye!", "Tschüss!")]
    assert list(read_pairs([plain])) == want
    assert list(read_pairs([zipped])) == want  # gzip is recognised by its bytes, not the name
    assert [(p.source, p.index) for p in read_pairs([plain, zipped])] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1),
                                                                           (1, 2)]
    assert count_lines(plain[0]) == count_lines(zipped[1]) == 3  # with and without a final newline
    assert check_pairs([plain, zipped]) == [3, 3]


def test_a_bom_at_a_later_lines_start_is_dropped(tmp_path: Path) -> None:
    # two files joined with `cat`, each opening with a BOM: the second one's stayed in its first pair (30th pass)
    en = write(tmp_path / "j.en", "\ufeffHello.\n\ufeffBye.\n")
    de = write(tmp_path / "j.de", "\ufeffHallo.\n\ufeffTschüss.\n", gz=True)
    assert list(read_pairs([(en, de)])) == [Pair(0, 0, "Hello.", "Hallo."), Pair(0, 1, "Bye.", "Tschüss.")]



def test_mt_text_in_a_legacy_encoding_is_told_how_to_convert(tmp_path: Path) -> None:
    """A Russian MT text saved in Windows-1251, gzipped: "not valid UTF-8" said nothing of what to do (33rd hostile
    pass); the encoding is named with the command for a gzip file, which, followed, reads."""
    import subprocess

    en = write(tmp_path / "x.en", "hello world\nhow are you\n")
    ru = tmp_path / "x.ru.gz"
    ru.write_bytes(gzip.compress("привет мир\nкак дела\n".encode("cp1251")))
    with pytest.raises(SateError) as err:
        list(read_pairs([(en, ru)]))
    advice = f"zcat {ru} | iconv -f CP1251 -t UTF-8 | gzip > {ru}.utf8"
    assert str(err.value) == (f"{ru}:1: not valid UTF-8 (invalid continuation byte); it reads as CP1251, an encoding "
                              f"ru text is saved in: convert it ({advice}, then move that over it)")
    if shutil.which("iconv") is None:
        pytest.skip("no iconv here to follow the advice with")
    subprocess.run(advice, shell=True, check=True)
    os.replace(f"{ru}.utf8", ru)
    assert [pair.tgt for pair in read_pairs([(en, ru)])] == ["привет мир", "как дела"]


@pytest.mark.parametrize("name, text, encoding", [
    ("x.zh", "我們今天談音樂。\n這是來自台灣的文字。\n", "BIG5"),  # Traditional Chinese: read whole as GB18030 too
    ("x.ru", "Привет, как дела?\nЭто русский текст.\n", "KOI8-R"),  # read whole as CP1251 too, upper case for lower
])
def test_the_encoding_named_is_the_texts(tmp_path: Path, name: str, text: str, encoding: str) -> None:
    """Big5 and KOI8-R text were told to convert from GB18030 and CP1251, which read their bytes whole; followed, the
    text was mojibake ("рТЙЧЕФ, ЛБЛ ДЕМБ?"), read at exit 0 (review33m). The encoding whose decoding is the
    language's letters is named, and the advice followed reads the text."""
    import subprocess

    en = write(tmp_path / "x.en", "we talk about music\nthis is text\n")
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    with pytest.raises(SateError, match=rf"it reads as {encoding}, .*convert it \((iconv .*), then move") as err:
        list(read_pairs([(en, path)]))
    if shutil.which("iconv") is None:
        pytest.skip("no iconv here to follow the advice with")
    subprocess.run(re.search(r"convert it \((iconv .*), then move", str(err.value))[1], shell=True, check=True)
    os.replace(f"{path}.utf8", path)
    assert [pair.tgt for pair in read_pairs([(en, path)])] == text.splitlines()


def test_tokenized_or_bpe_mt_text_is_refused(tmp_path: Path) -> None:
    """A WMT corpus a Moses pipeline had tokenized (`don &apos;t`, `&quot;`) or BPE-segmented (`un@@ believ@@
    able`) given as --mt-text trained the vocabularies on "don apost" and on pieces of `&quot;` and `@@`, exit 0
    (33rd hostile pass); text with one stray `&amp;` and an e-mail's `@` is text."""
    en = write(tmp_path / "train.en", "".join(f"line {k} about music\n" for k in range(30)))
    tok = write(tmp_path / "train.tok.de", "ich weiß es nicht .\ner sagte &quot; ja &quot; .\ngeht &apos; s ?\n" * 10)
    with pytest.raises(SateError, match=rf"^{tok}: Moses-tokenized text \(its escapes, `&quot;` `&apos;`, in 13 of its "
                                        r"first 20 lines\), not MT text of one sentence a line as written: give the "
                                        r"corpus as released, before tokenization"):
        check_pairs([(en, tok)])
    bpe = write(tmp_path / "train.bpe.de", "ich wei@@ ss es nicht\nun@@ glaub@@ lich\nja\n" * 10)
    with pytest.raises(SateError, match=rf"^{bpe}: BPE-segmented text \(subword-nmt's `@@` in 14 of its first 20 "
                                        r"lines\), .* give the words, before BPE \(sed -E 's/\(@@ \)\|\(@@ \?\$\)//g' "
                                        r"undoes it\)$"):
        check_pairs([(en, bpe)])
    spm = write(tmp_path / "train.spm.de", "\u2581ich \u2581wei ss \u2581es\n\u2581ja\n" * 10)
    with pytest.raises(SateError, match=rf"^{spm}: SentencePiece-encoded text .* undoes it\)$") as err:
        check_pairs([(en, spm)])
    if shutil.which("sed") is not None:  # the advice followed
        import subprocess

        undo = re.search(r"or (sed .*) undoes it", str(err.value))[1]
        decoded = subprocess.run(f"{undo} {spm}", shell=True, check=True, capture_output=True, text=True).stdout
        assert decoded.splitlines()[:2] == ["ich weiss es", "ja"]
    text = write(tmp_path / "train.de", "Tom &amp; Jerry sind hier.\nSchreib an tom@home.de @@ jetzt.\n"
                 + "Ein Satz.\n" * 28)
    assert check_pairs([(en, text)]) == [30]


def test_web_texts_entities_are_noted_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Untokenized web text with HTML entities (`Terms &amp; Conditions`, `&quot;hi&quot;`, `a &lt; b`: WMT's
    crawled corpora carry them) was refused as Moses-tokenized, naming escapes it did not hold, with no way to go on
    (review33m). Only a tokenizer's escapes (`don &apos;t`, `l&apos; homme`, a quote standing alone) are refused;
    entities are a note naming them and a command that unescapes them, which works."""
    en = write(tmp_path / "train.en", "".join(f"line {k}\n" for k in range(20)))
    web = write(tmp_path / "web.de", "Schuhe &amp; Taschen kaufen.\nAGB &amp; Datenschutz\nEr sagte &quot;hi&quot;.\n"
                "if (a &lt; b) return;\n" + "Ein Satz.\n" * 16)
    assert check_pairs([(en, web)]) == [20]
    note = capsys.readouterr().err
    assert note.startswith(f"note: {web}: HTML/XML entities (`&amp;` `&quot;` `&lt;`) in 4 of its first 20 lines") \
        and note.count("\n") == 1, note
    if shutil.which("python3") is not None:  # the advice followed
        import subprocess

        unescape = re.search(r"first \((python3 .*)\)$", note.strip())[1]
        subprocess.run(unescape, shell=True, check=True)
        assert Path(f"{web}.txt").read_text().splitlines()[:3] == ["Schuhe & Taschen kaufen.", "AGB & Datenschutz",
                                                                   'Er sagte "hi".']
    french = write(tmp_path / "tok.fr", "l&apos; homme est là .\nqu&apos; il vienne .\n" * 10)
    with pytest.raises(SateError, match=rf"^{french}: Moses-tokenized text \(its escapes, `&apos;`, in 20 of its"):
        check_pairs([(en, french)])

def test_a_corpus_text_read_as_shipped_is_not_sniffed_as_mt_text(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The recipes give MuST-C's own train text as MT text with --mt-extra (stages 2 and 4): it was sniffed for a
    tokenizer's escapes there, and refused hours after `sate prep` of the same text, which does not sniff, let it be
    (review33m). A text beside its segments' list (MuST-C's yaml, Augmented LibriSpeech's alignments.meta) is read
    as prep reads it; the same lines elsewhere are refused."""
    escaped = "er sagte &quot; ja &quot; .\n" * 2 + "Ein Satz &amp; mehr.\n" * 18
    for folder, beside in (("mustc/en-de/data/train/txt", "train.yaml"), ("libri/train", "alignments.meta")):
        txt = tmp_path / folder
        txt.mkdir(parents=True)
        write(txt / beside, "- {duration: 1.0, offset: 0.0, speaker_id: s, wav: a.wav}\n")
        en, de = write(txt / "train.en", "a sentence\n" * 20), write(txt / "train.de", escaped)
        assert check_pairs([(en, de)]) == [20] and capsys.readouterr().err == ""
    (txt / "alignments.meta").unlink()
    with pytest.raises(SateError, match=r"train\.de: Moses-tokenized text"):
        check_pairs([(en, de)])


def test_errors_name_the_file_and_line(tmp_path: Path) -> None:
    en = write(tmp_path / "x.en", "one\ntwo\nthree\n")
    de = write(tmp_path / "x.de", "eins\nzwei\n")
    with pytest.raises(SateError, match=r"x\.en has 3 lines but .*x\.de has 2"):
        check_pairs([(en, de)])
    with pytest.raises(SateError, match=r"x\.de ends after 2 lines but .*x\.en goes on"):
        list(read_pairs([(en, de)]))
    bad = tmp_path / "bad.de"
    bad.write_bytes(b"eins\nzw\xffei\ndrei\n")
    with pytest.raises(SateError, match=r"bad\.de:2: not valid UTF-8"):
        list(read_pairs([(en, bad)]))
    cut = tmp_path / "cut.de.gz"
    cut.write_bytes(gzip.compress(b"eins\nzwei\ndrei\n" * 1000)[:-20])
    with pytest.raises(SateError, match=r"cut\.de\.gz: cannot read"):
        count_lines(cut)
    damaged = bytearray(gzip.compress(b"".join(b"line %d of text\n" % i for i in range(2000)), mtime=0))
    damaged[20] ^= 0xFF  # inside the deflate stream: zlib.error, a traceback (thirteenth hostile pass)
    (tmp_path / "damaged.de.gz").write_bytes(damaged)
    for read in (count_lines, lambda path: list(read_pairs([(path, path)]))):
        with pytest.raises(SateError, match=r"damaged\.de\.gz: cannot read: the gzip data is damaged \(Error -3 "):
            read(tmp_path / "damaged.de.gz")
    with pytest.raises(SateError, match=r"missing\.en: file is missing"):
        check_pairs([(tmp_path / "missing.en", de)])
    os.mkfifo(tmp_path / "pipe.en")  # was "file is missing", though it was there: MT text is read twice
    with pytest.raises(SateError, match=r"pipe\.en: a named pipe, not a text file \(MT text is read twice"):
        check_pairs([(tmp_path / "pipe.en", de)])
    with pytest.raises(SateError, match=r"null: a device or socket, not a text file \(MT text is read twice"):
        check_pairs([(Path("/dev/null"), de)])
    # named as sate.files.not_a_file names them (both were "file is missing")
    (tmp_path / "gone.en").symlink_to(tmp_path / "moved.en")
    with pytest.raises(SateError, match=r"gone\.en: a broken symlink \(to .*moved\.en, which is not there\), not a "
                                        r"text file$"):
        check_pairs([(tmp_path / "gone.en", de)])
    (tmp_path / "loop.en").symlink_to(tmp_path / "loop.en")
    with pytest.raises(SateError, match=r"loop\.en: a symlink loop \(it leads back to itself\), not a text file$"):
        check_pairs([(tmp_path / "loop.en", de)])


def test_a_line_longer_than_any_sentence_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    """MT text is read a line at a time: a file without line breaks (old Mac line endings, \\r alone) was one line of
    all its bytes, so 7 MB of gzip asked for gigabytes (eleventh hostile pass). A line of MAX_LINE_BYTES is read."""
    from sate.data.parallel_text import MAX_LINE_BYTES

    en = tmp_path / "x.en.gz"
    en.write_bytes(gzip.compress(b"one\r" * (MAX_LINE_BYTES // 2)))
    de = write(tmp_path / "x.de", "eins\n")
    with pytest.raises(SateError, match=r"x\.en\.gz:1: a line of more than 1,048,576 bytes, not a sentence"):
        list(read_pairs([(en, de)]))
    long = b"a" * (MAX_LINE_BYTES - 1) + b"\r\n"
    (tmp_path / "y.en").write_bytes(b"one\n" + long)
    (tmp_path / "y.de").write_bytes(b"eins\n" + long)
    assert [len(p.en) for p in read_pairs([(tmp_path / "y.en", tmp_path / "y.de")])] == [3, MAX_LINE_BYTES - 1]


def test_reservoir_keeps_small_inputs_whole_and_samples_large_ones_uniformly() -> None:
    assert reservoir_sample(iter("abcde"), 5) == list("abcde")
    assert reservoir_sample(iter("abc"), 10) == list("abc")
    sample = reservoir_sample(range(1000), 50, seed=3)
    assert len(sample) == len(set(sample)) == 50 and sample == reservoir_sample(range(1000), 50, seed=3)
    assert sample != reservoir_sample(range(1000), 50, seed=4)
    hits = Counter(item for seed in range(2000) for item in reservoir_sample(range(10), 3, seed=seed))
    assert all(0.25 < hits[i] / 2000 < 0.35 for i in range(10))  # each item in 3/10 of the samples


@pytest.mark.parametrize(("text", "what"), [
    ('{"id": "a", "audio": "a.wav", "offset": 0, "duration": 1.0, "src": "x", "tgt": "y"}\n' * 2, "rows of JSON"),
    ("- {duration: 1.2, offset: 0.3, speaker_id: s, wav: a.wav}\n" * 2, "a MuST-C segment list"),
    ("epoch,step,train/loss\n0,1,5.0\n", "a CSV table")])
def test_another_kind_of_file_given_as_mt_text_is_refused(tmp_path: Path, text: str, what: str) -> None:
    """Twenty-second hostile pass: `sate vocab --mt-text DATA/dev.jsonl ...` (a manifest, a MuST-C yaml beside its
    .en, a metrics.csv, copied as the source side) trained SentencePiece on it, exit 0; both sides are looked at
    before the lines are counted."""
    en, de = write(tmp_path / "pairs.en", text), write(tmp_path / "pairs.de", "eins\nzwei\n")
    with pytest.raises(SateError, match=rf"^{tmp_path}/pairs\.en: {what}"):
        check_pairs([(en, de)])
    with pytest.raises(SateError, match=rf"^{tmp_path}/pairs\.en: {what}"):
        check_pairs([(de, en)])
    assert check_pairs([(de, de)]) == [2]


# Two unrelated Chinese texts (news against talks), 25 clauses each: no clause of one is the other's, most
# characters are.
ZH_NEWS = [f"{who}{what}。" for who in ("政府", "这家公司", "科学家们", "北京市民", "很多学生")
           for what in ("宣布了新的政策", "在上周大幅上涨", "发现了一种新方法", "去公园散步", "正在准备考试")]
ZH_TALKS = [f"{who}{what}。" for who in ("我们每个人", "我的朋友", "这个村庄的人", "孩子们", "大家")
            for what in ("都可以改变世界", "住在一个小村庄里", "想谈谈我们的未来", "每天都在工作", "很高兴来到这里")]


def test_unspaced_scripts_are_compared_by_characters(tmp_path: Path) -> None:
    """Chinese has no spaces, so a clause was one "word" and two Chinese texts shared none: news.zh over Chinese
    translations whose audio's folders say en-de (a talk linked to another pair's copy) was refused, with advice to
    give de (fix24d). Their characters are compared; German text named .de over an En-Zh corpus is still refused."""
    english, chinese, german = tmp_path / "news.en", tmp_path / "news.zh", tmp_path / "news.de"
    english.write_text("a line\n" * 5, encoding="utf-8")
    chinese.write_text("".join(f"{line}\n" for line in ZH_NEWS), encoding="utf-8")
    linked = [{"audio": f"/c/en-de/data/train/wav/ted_{i}.wav", "tgt": line, "src_norm": "x"}
              for i, line in enumerate(ZH_TALKS)]
    check_target_language([(english, chinese)], linked, "--mt-text")  # one language by its characters: no refusal
    german.write_text("Die Katze sitzt auf der Matte und wartet auf den Hund, der nicht kommt.\n" * 3
                      + "Wo ist der Bahnhof, fragte die alte Frau den jungen Mann im grünen Mantel?\n" * 3,
                      encoding="utf-8")
    rows = [{**row, "audio": row["audio"].replace("en-de", "en-zh")} for row in linked]
    with pytest.raises(SateError, match="news.de is named as .de text.*few of its words"):
        check_target_language([(english, german)], rows, "--mt-text")


def test_model_names_say_their_target_language() -> None:
    """opus-mt-en-jap (Helsinki-NLP's Japanese) was read as "jap" and refused over MuST-C en-ja (fix24d)."""
    assert model_target("opus-mt-en-jap")[1] == "ja"
    assert model_target("models--Helsinki-NLP--opus-mt-en-de")[1] == "de"
    assert model_target("opus-mt-en-ROMANCE")[1] is None and model_target("en-de")[1] is None
    # a group's code names several languages, none to compare the pieces of one with (24th hostile pass, review)
    assert [model_target(f"opus-mt-en-{group}")[1] for group in ("mul", "gmw", "roa", "sla", "trk", "afa", "ber")] \
        == [None] * 7
    assert model_target("opus-mt-en-pqw") == (True, None) and model_target("opus-mt-en-ROMANCE") == (True, None)
    assert model_target("opus-mt-en-de-converted") == (False, None) and model_target("opus-mt-en-fr") == (True, "fr")
    # a language compared nowhere else is still one language: its pieces decide (review24g)
    assert [model_target(f"opus-mt-en-{one}")[1] for one in ("fi", "da", "uk")] == ["fi", "da", "uk"]


# Japanese of the talks' subjects, 25 sentences: kana around ideographs the Chinese talks hold too (two fifths of
# the fewer characters are shared, four times the share that tells two languages apart)
JA_NEWS = [f"{who}{what}。" for who in ("我々一人一人は", "私の友人は", "この村の人は", "子供たちは", "皆さんは")
           for what in ("世界を変えることができる", "小さな村に住んでいる", "我々の未来について話したい",
                        "毎日工作している", "ここに来て高興だ")]


def test_japanese_is_told_from_chinese_by_its_kana(tmp_path: Path) -> None:
    """Counting each ideograph as a word, Japanese text over Chinese translations shared enough of them to pass as
    Chinese (24th hostile pass, review): kana is Japanese's alone. Under another pair's folder (a linked talk),
    Chinese over Chinese and Japanese over Japanese still pass, and so does German over German translations that hold
    one Japanese word (kana says nothing of a text whose letters are mostly not of an unspaced script)."""
    english, japanese, chinese = tmp_path / "news.en", tmp_path / "news.ja", tmp_path / "news.zh"
    english.write_text("a line\n" * 25, encoding="utf-8")
    japanese.write_text("".join(f"{line}\n" for line in JA_NEWS), encoding="utf-8")
    chinese.write_text("".join(f"{line}\n" for line in ZH_NEWS), encoding="utf-8")

    def rows(pair: str, lines: list[str]) -> list[dict]:
        return [{"audio": f"/c/{pair}/data/train/wav/ted_{i}.wav", "tgt": line, "src_norm": "x"}
                for i, line in enumerate(lines)]
    with pytest.raises(SateError, match="news.ja is named as .ja text.*news.ja is written with kana \\(Japanese\\), "
                                        "the train split's translations are not"):
        check_target_language([(english, japanese)], rows("en-zh", ZH_TALKS), "--mt-text")
    # a Latin word in each line weighs one word, not its letters (review24h): still Chinese lines
    with pytest.raises(SateError, match="news.ja is written with kana"):
        check_target_language([(english, japanese)], rows("en-zh", [f"{line} (Facebook, Google)"
                                                                   for line in ZH_TALKS]), "--mt-text")
    check_target_language([(english, chinese)], rows("en-de", ZH_TALKS), "--mt-text")
    check_target_language([(english, japanese)], rows("en-zh", JA_NEWS), "--mt-text")
    german_lines = [f"{line} Sie sagte: ありがとう." if k == 0 else line
                    for k, line in enumerate(GERMAN_TALKS)]
    german = tmp_path / "news.de"
    german.write_text("".join(f"{line}\n" for line in GERMAN_TALKS), encoding="utf-8")
    check_target_language([(english, german)], rows("en-fr", german_lines), "--mt-text")


GERMAN_TALKS = [f"{who} {what}." for who in ("Wir alle", "Mein Freund", "Die Leute im Dorf", "Die Kinder", "Jeder")
                for what in ("können die Welt verändern", "wohnen in einem kleinen Dorf", "sprechen über die Zukunft",
                             "arbeiten jeden Tag", "sind froh, hier zu sein")]


def test_english_text_as_the_target_side_is_refused(tmp_path: Path) -> None:
    """`--mt-text train.en train.en` (one file both sides) and a second English file named .en as the target side
    trained the target vocabulary on English beside German, exit 0 (25th hostile pass); a link to the one file is one
    file too, and German text as the target side still passes."""
    english = write(tmp_path / "news.en", "The cat sits on the mat and waits for the dog that never comes.\n" * 3
                    + "Where is the station, asked the old woman the young man in the green coat?\n" * 3)
    other = write(tmp_path / "talks.en", english.read_text(encoding="utf-8"))
    german = write(tmp_path / "news.de", "Die Katze sitzt auf der Matte und wartet auf den Hund, der nicht kommt.\n" * 3
                   + "Wo ist der Bahnhof, fragte die alte Frau den jungen Mann im grünen Mantel?\n" * 3)
    (tmp_path / "link.en").symlink_to(english)
    rows = [{"audio": f"/c/en-de/data/train/wav/ted_{i}.wav", "src_norm": line.lower(), "tgt": line}
            for i, line in enumerate(german.read_text(encoding="utf-8").splitlines())]
    for tgt in (english, tmp_path / "link.en"):
        with pytest.raises(SateError, match=rf"^--mt-text: {english} and {tgt} are one file, given as both sides"):
            check_pair_order([(english, tgt)], rows, "--mt-text")
    with pytest.raises(SateError, match=r"talks.en is named as .en text, and the data directory's train split is "
                                        r"en-de .* few of its words are in the train split's translations"):
        check_target_language([(english, other)], rows, "--mt-text")
    check_pair_order([(english, german)], rows, "--mt-text")
    check_target_language([(english, german)], rows, "--mt-text")
