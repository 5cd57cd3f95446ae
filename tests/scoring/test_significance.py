"""Confidence intervals and paired bootstrap p-values equal what the sacrebleu CLI prints for them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sate.errors import SateError
from sate.scoring.degeneration import has_loop, length_ratio, loop_share
from sate.scoring.significance import confidence, paired_bootstrap

REFS = ["Der Zug fährt um 7 Uhr ab.", "Ich möchte einen Kaffee.", "Wo ist der Bahnhof?", "Es regnet heute.",
        "Das Zimmer kostet 80 Euro.", "Biegen Sie an der Ampel links ab."]
GOOD = ["Der Zug fährt ab.", "Ich möchte einen Tee.", "Wo ist der Bahnhof?", "Es regnet.",
        "Das Zimmer kostet 80 Euro.", "Biegen Sie links ab."]
BAD = ["Der Bus.", "Ich möchte Kaffee.", "Wo Bahnhof?", "Heute.", "Zimmer Zimmer Zimmer Zimmer.", "Links."]
SACREBLEU = str(Path(sys.executable).parent / "sacrebleu")


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_confidence_equals_the_cli(tmp_path: Path) -> None:
    ref, hyp = write(tmp_path, "ref.txt", REFS), write(tmp_path, "hyp.txt", GOOD)
    cli = subprocess.run([SACREBLEU, str(ref), "-i", str(hyp), "-m", "bleu", "chrf", "--confidence", "-f", "text"],
                         check=True, capture_output=True, text=True).stdout
    ours = confidence(GOOD, REFS)
    for key, name in (("bleu", "BLEU"), ("chrf", "chrF2")):
        line = next(x for x in cli.splitlines() if x.strip().startswith(name))
        mean, ci = map(float, re.search(r"μ = ([\d.]+) ± ([\d.]+)", line).groups())
        assert (round(ours[key]["mean"], 1), round(ours[key]["ci"], 1)) == (mean, ci), line
        assert "bs:1000|seed:12345" in ours["signature"][key]


@pytest.mark.slow
def test_paired_bootstrap_equals_the_cli(tmp_path: Path) -> None:
    ref = write(tmp_path, "ref.txt", REFS)
    base, other = write(tmp_path, "base.txt", GOOD), write(tmp_path, "other.txt", BAD)
    cli = subprocess.run([SACREBLEU, str(ref), "-i", str(base), str(other), "-m", "bleu", "chrf", "--paired-bs",
                          "-f", "text"], check=True, capture_output=True, text=True).stdout
    ours = paired_bootstrap([("base", GOOD), ("other", BAD)], REFS)
    assert ours["base"]["bleu"]["p"] is None and ours["base"]["chrf"]["p"] is None
    p_values = [float(p) for p in re.findall(r"p = ([\d.]+)", cli)]  # BLEU then chrF of the other system
    assert [round(ours["other"][k]["p"], 4) for k in ("bleu", "chrf")] == p_values
    row = next(x for x in cli.splitlines() if "other.txt" in x)
    assert f"{ours['other']['bleu']['score']:.1f} ({ours['other']['bleu']['mean']:.1f} ± " in row
    with pytest.raises(SateError, match="a baseline and at least one other"):
        paired_bootstrap([("base", GOOD)], REFS)
    with pytest.raises(SateError, match="other: 2 hypotheses for 6 references"):
        paired_bootstrap([("base", GOOD), ("other", BAD[:2])], REFS)


def test_a_system_identical_to_the_baseline_is_no_difference() -> None:
    """sacreBLEU gives a system tested against itself its smallest p-value (1/1001: multeval's "a zero difference
    should not be attributed to chance"), and `sate report` marked two systems with the very same outputs * ("a
    difference beyond noise"). The same outputs are no difference: p = 1."""
    ours = paired_bootstrap([("base", GOOD), ("copy", list(GOOD)), ("other", BAD)], REFS)
    assert ours["copy"]["bleu"]["p"] == ours["copy"]["chrf"]["p"] == 1.0
    assert ours["copy"]["bleu"]["score"] == ours["base"]["bleu"]["score"]
    assert ours["other"]["bleu"]["p"] < 0.05  # a real difference keeps sacreBLEU's p-value


def test_two_systems_both_at_bleu_zero_are_no_difference() -> None:
    """Two untrained systems with other outputs, both at BLEU 0 on every resample: sacreBLEU's p-value was its
    smallest (1/1001), and `sate report` marked "0.0 vs 0.0" as a difference beyond noise (0.001*)."""
    zero_a, zero_b = ["Xq"] * len(REFS), ["Zv Zv"] * len(REFS)
    ours = paired_bootstrap([("base", zero_a), ("other", zero_b)], REFS)
    assert ours["other"]["bleu"]["score"] == ours["base"]["bleu"]["score"] == 0.0
    assert ours["other"]["bleu"]["p"] == 1.0


def test_loops_and_length_ratio() -> None:
    assert has_loop("Der Der Der Der Zug") and not has_loop("Der Der Der Zug Der")
    assert has_loop("Der, Der Der Der.")  # the punctuation around a word is not part of it
    # a trailing-off "... ... ... ..." (or "- - - -") was four empty words in a row, a loop (25th hostile pass)
    assert not has_loop("Ich weiß nicht ... ... ... ... ja") and not has_loop("- - - - -")
    assert not has_loop("ja ... ja ... ja ... ja")  # a word of punctuation alone breaks a run
    # of any script: an ellipsis, dashes, German and French quotes (review)
    assert not has_loop("Ich weiß nicht … … … … ja") and not has_loop("— — — —") and not has_loop("« « « «")
    assert has_loop("„Der“ „Der“ Der Der") and has_loop("«Nein» «Nein» «Nein» «Nein»")
    assert loop_share(BAD) == pytest.approx(1 / 6) and loop_share([]) == 0.0
    assert length_ratio(REFS, REFS) == 1.0
    assert 0 < length_ratio(BAD, REFS) < length_ratio(GOOD, REFS) < 1


def test_a_short_chinese_or_japanese_output_has_a_short_length_ratio() -> None:
    """13a splits text without spaces at punctuation only: a Chinese output a third as long as its references had a
    length ratio of 1.000, as a whole one had (twenty-ninth hostile pass). In characters, as sacreBLEU's zh tokens."""
    refs = ["我们今天去公园散步。", "他说，这个问题很难，但是我们可以解决。", "谢谢大家。"]
    assert length_ratio(["我们去", "他说", "谢谢。"], refs) == pytest.approx(8 / 34)
    whole = ["我们今天去公园散步", "他说这个问题很难但是我们可以解决", "谢谢大家"]  # without the punctuation
    assert length_ratio(whole, refs) == pytest.approx(29 / 34)
    japanese = ["今日はいい天気ですね。", "ありがとうございます。"]
    assert length_ratio(["今日は。", "ありがとう。"], japanese) == pytest.approx(10 / 22)
    assert length_ratio(japanese, japanese) == 1.0


def test_mostly_empty_outputs_still_get_an_interval() -> None:
    """sacreBLEU 2.6's own chrF interval raises TypeError on these (with NumPy 2: some resamples score a Python
    0.0, the others float32); an evaluation must never lose its scores to the interval."""
    hyps = [""] * 5 + ["Zimmer Zimmer Zimmer."]
    ours = confidence(hyps, REFS)
    for key in ("bleu", "chrf"):
        assert ours[key]["mean"] >= 0 and ours[key]["ci"] >= 0 and isinstance(ours[key]["mean"], float)
    assert ours["chrf"]["ci"] > 0  # one sentence in six has text: the resamples differ
    paired = paired_bootstrap([("base", GOOD), ("empty", hyps)], REFS)["empty"]["chrf"]
    assert paired["p"] is not None and paired["score"] < confidence(GOOD, REFS)["chrf"]["mean"]


def test_a_looping_chinese_or_japanese_output_is_a_loop() -> None:
    """Chinese and Japanese are written without spaces: a looping output is one whitespace token, and the share of
    loops of a zh or ja system was 0% whatever it repeated (twenty-seventh hostile pass). Their text that repeats
    nothing four times, a doubled word, and a Japanese ellipsis are no loop."""
    assert has_loop("我们我们我们我们") and has_loop("他说：我我我我")
    assert has_loop("ありがとうありがとうありがとうありがとう")
    assert has_loop("Zug 谢谢谢谢 ja") and loop_share(["今天天气很好。", "我们我们我们我们"]) == 0.5
    assert not has_loop("谢谢大家。（掌声）") and not has_loop("我们是我们的我们和我们") and not has_loop("どきどき")
    assert not has_loop("我们我们我们") and not has_loop("そして・・・・はい")


def test_chinese_words_separated_by_punctuation_loop_as_english_ones_do() -> None:
    """"we, we, we, we" is a loop; "我们，我们，我们，我们" (the same, its words ended by commas) was none: the rule
    for unspaced text saw a unit broken by punctuation (twenty-seventh hostile pass). A doubled word said twice, three
    repeats, and a number with dots stay no loop."""
    for text in ("我们，我们，我们，我们", "我们、我们、我们、我们。", "「我们」「我们」「我们」「我们」",
                 "はい。はい。はい。はい。", "他说：我们, 我们, 我们, 我们"):
        assert has_loop(text), text
    for text in ("谢谢，谢谢大家。", "谢谢，谢谢，谢谢。", "是的，是的，是的，我知道。", "好，好，好。", "1.1.1.1",
                 "v2.2.2.2", "第一、第二、第三、第四", "我们 ， 我们 ， 我们"):
        assert not has_loop(text), text


def test_a_japanese_sound_lengthened_is_no_loop() -> None:
    """The prolonged-sound mark and a small kana lengthen a sound, as "sooooo" does in English, no loop there:
    "すごーーーーい" and "あっっっっ" were loops. A word holding the mark, repeated, still is one."""
    for text in ("すごーーーーい！", "えーーーーと", "あっっっっ", "ッッッッ"):
        assert not has_loop(text), text
    for text in ("パーパーパーパー", "コーヒーコーヒーコーヒーコーヒー", "ワンワンワンワン"):
        assert has_loop(text), text


@pytest.mark.slow
def test_the_loop_rule_finds_no_loop_in_real_chinese() -> None:
    """Real text is no loop: pypinyin's table of Chinese phrases, one at a time and run together as a sentence's
    clauses are (with commas, enumeration commas, full stops or spaces between them), gives no hit. (Not run
    together without them: the table is sorted, so "区区" met "区区之众", a loop no sentence writes.)"""
    phrases = list(pytest.importorskip("pypinyin.phrases_dict").phrases_dict)
    assert len(phrases) > 10_000
    assert not [phrase for phrase in phrases if has_loop(phrase)]
    for separator in ("，", "、", "。", " "):
        sentences = [separator.join(phrases[i:i + 6]) for i in range(0, len(phrases), 6)]
        assert not [sentence for sentence in sentences if has_loop(sentence)], separator


@pytest.mark.parametrize("seed", ["abc", "-3", "", "1.5"])
def test_a_bootstrap_seed_sacrebleu_cannot_read_is_one_line(monkeypatch: pytest.MonkeyPatch, seed: str) -> None:
    """SACREBLEU_SEED=abc was a ValueError traceback from inside sacreBLEU's resampling (twenty-ninth hostile pass)."""
    monkeypatch.setenv("SACREBLEU_SEED", seed)
    for call in (lambda: confidence(GOOD, REFS), lambda: paired_bootstrap([("a", GOOD), ("b", BAD)], REFS)):
        with pytest.raises(SateError, match=f"^SACREBLEU_SEED={re.escape(repr(seed))}: .*whole number of 0 or more"):
            call()


@pytest.mark.parametrize("seed", ["7", "0", "None"])
def test_a_seed_sacrebleu_reads_is_taken(monkeypatch: pytest.MonkeyPatch, seed: str) -> None:
    monkeypatch.setenv("SACREBLEU_SEED", seed)
    assert confidence(GOOD, REFS)["signature"]["bleu"].split("seed:")[1].startswith(seed.lower() + "|")


def test_the_printed_length_ratio_of_chinese_names_its_unit() -> None:
    """Review of the twenty-ninth pass: `sate evaluate` printed "ratio = 1.000" in its BLEU line (13a tokens) and
    "length ratio ... 0.235" a few lines below (characters) for the same Chinese outputs, without a word of why."""
    from sate.scoring.degeneration import length_line, length_unit

    refs = ["我们今天去公园散步。", "他说，这个问题很难，但是我们可以解决。", "谢谢大家。"]
    hyps = ["我们去", "他说", "谢谢。"]
    line = length_line(length_ratio(hyps, refs), length_unit(refs), loop_share(hyps))
    assert line.startswith("length ratio (hypothesis / reference, in characters; the BLEU line's ratio counts 13a "
                           "tokens) 0.235; outputs with a word")
    assert length_line(0.5, length_unit(REFS), 0.0).startswith("length ratio (hypothesis / reference) 0.500; ")


def test_a_share_of_loops_is_never_rounded_to_none_or_all() -> None:
    """33rd hostile pass: one looping output in 2,000 was "0.0%" in `sate evaluate`'s line (and one in 300 "0%" in
    `sate report`'s table), read as none."""
    from sate.scoring.degeneration import length_line, share_text
    from sate.scoring.report import markdown

    assert length_line(1.0, "13a tokens", loop_share(["der der der der"] + ["a b"] * 2999)).endswith(": <0.1%")
    assert [share_text(x) for x in (0.0, 0.25, 0.9996, 1.0)] == ["0.0%", "25.0%", ">99.9%", "100.0%"]
    row = {"system": "st", "split": "tst-COMMON", "bleu": 20.0, "loop_share": 1 / 300}
    assert "| <1% |" in markdown([row]) and "| 0% |" in markdown([{**row, "loop_share": 0.0}])
