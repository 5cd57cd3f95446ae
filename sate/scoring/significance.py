"""Which differences are real: 95% confidence intervals and paired bootstrap p-values, from sacreBLEU.

Both use sacreBLEU's own bootstrap (1,000 resamples, its fixed seed 12345 unless SACREBLEU_SEED says
otherwise), so the figures equal `sacrebleu REF -i HYP --confidence` and `sacrebleu REF -i BASE OTHER
--paired-bs`. A confidence interval is given as sacreBLEU prints it: mean ± half the width of the
95% interval of the resampled scores. A p-value is roughly the chance of a difference to the baseline
this large arising if both systems came from the same process; below 0.05 the difference is taken as
real (it says that the systems differ, not which is better: the scores say that).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sate.errors import SateError, shown

if TYPE_CHECKING:  # sacrebleu: imported when a metric is computed (0.3 s)
    from sacrebleu.metrics.base import Metric

RESAMPLES = 1000
METRICS = {"bleu": "BLEU", "chrf": "chrF2"}  # our key -> sacreBLEU's name in PairedTest results


def bootstrap_seed() -> int | None:
    """SACREBLEU_SEED as sacreBLEU reads it (12345 when unset; None for `none`: a new seed each run), checked before
    any work: sacreBLEU reads it with int() deep in its resampling, so `SACREBLEU_SEED=abc` was a ValueError traceback
    after a whole split was decoded (twenty-ninth hostile pass)."""
    value = os.environ.get("SACREBLEU_SEED", "12345")
    if value.lower() == "none":
        return None
    try:
        seed = int(value)
    except ValueError:
        seed = -1
    if seed < 0:  # NumPy's generator takes no negative seed: a ValueError too
        raise SateError(f"SACREBLEU_SEED={shown(value)}: sacreBLEU's bootstrap seed must be a whole number of 0 or "
                        "more, or none (a new seed each run); unset it for sacreBLEU's own, 12345")
    return seed


def seed_note() -> str:
    """How the bootstrap was seeded, for a table's legend: sacreBLEU's paired test takes a seed of 0 for none, so
    `SACREBLEU_SEED=0` (or `none`) gave other p-values at every run of `sate report`, and the table did not say so.
    A seed sacreBLEU cannot read stops a paired test (`paired_bootstrap`); a table that made none (one translating
    system, a split of one sentence) is written, as before the seed was checked, and says it (review29r)."""
    try:
        seed = bootstrap_seed()
    except SateError:
        return f"none made: SACREBLEU_SEED={shown(os.environ['SACREBLEU_SEED'])} is no seed sacreBLEU reads"
    if not seed:
        return (f"unseeded: SACREBLEU_SEED={os.environ['SACREBLEU_SEED']} has sacreBLEU draw a new seed each run, so "
                "the p-values vary between runs")
    return f"seed {seed}"


def _metrics() -> dict[str, Metric]:
    from sacrebleu.metrics import BLEU, CHRF  # slow: sacrebleu (0.3 s)

    return {"BLEU": BLEU(), "chrF2": CHRF()}


def confidence(hyps: Sequence[str], refs: Sequence[str]) -> dict[str, dict[str, float]]:
    """{"bleu": {"mean", "ci"}, "chrf": {...}}: the bootstrap mean and half-width of the 95% interval."""
    if len(hyps) != len(refs) or not refs:
        raise SateError(f"{len(hyps)} hypotheses for {len(refs)} references: nothing to resample")
    bootstrap_seed()
    metrics = _metrics()
    out = {}
    for key, name in METRICS.items():
        out[key] = _bootstrap_interval(metrics[name], list(hyps), list(refs))
    out["signature"] = {key: metrics[name].get_signature().format() for key, name in METRICS.items()}
    return out


def _bootstrap_interval(metric: Metric, hyps: list[str], refs: list[str]) -> dict[str, float]:
    """sacreBLEU's `corpus_score(n_bootstrap=RESAMPLES)` interval, computed on Python floats.

    sacreBLEU's own version averages the resampled scores with `statistics.mean`, which fails ("don't know
    how to coerce float and float32", sacreBLEU 2.6 with NumPy 2) when chrF scores some resamples as a Python
    0.0 and the others as float32: a split whose outputs are mostly empty does it. Same resamples (its
    function, its seed), same interval; the signature says bs:1000 as sacreBLEU's would.
    """
    from sacrebleu.significance import _bootstrap_resample  # slow: NumPy; sacreBLEU's own resampling

    stats = metric._extract_corpus_statistics(hyps, [refs])
    metric.n_bootstrap = RESAMPLES
    metric.seed, resampled = _bootstrap_resample(stats, metric, RESAMPLES)
    scores = sorted(float(score.score) for score in resampled)
    lower = len(scores) // 40  # the 95% interval, as sacreBLEU cuts it
    return {"mean": statistics.mean(scores), "ci": 0.5 * (scores[len(scores) - lower - 1] - scores[lower])}


def paired_bootstrap(systems: Sequence[tuple[str, Sequence[str]]], refs: Sequence[str]) -> dict[str, dict]:
    """name -> {"bleu": {"score", "mean", "ci", "p"}, "chrf": {...}}; the first system is the baseline (p None)."""
    from sacrebleu.significance import PairedTest  # slow: sacrebleu (0.3 s)

    if len(systems) < 2:
        raise SateError("a paired test needs a baseline and at least one other system")
    bootstrap_seed()
    if not refs:
        raise SateError("no references: nothing to resample")
    for name, hyps in systems:
        if len(hyps) != len(refs):
            raise SateError(f"{name}: {len(hyps)} hypotheses for {len(refs)} references")
    _, scores = PairedTest([(n, list(h)) for n, h in systems], _metrics(), [list(refs)], test_type="bs",
                           n_samples=RESAMPLES)()
    out: dict[str, dict] = {name: {} for name, _ in systems}
    for key, name in METRICS.items():
        baseline_score = float(scores[name][0].score)
        for (system, _), result in zip(systems, scores[name], strict=True):
            p = None if result.p_value is None else float(result.p_value)
            if p is not None and float(result.score) == baseline_score:
                # sacreBLEU counts only resampled differences above the observed one, so a zero difference whose
                # resamples are all zero (the system itself, or two systems both at BLEU 0 on every resample) got
                # its smallest p-value (1/1001), which the table marked *: no difference is evidence of none
                p = 1.0
            out[system][key] = {"score": float(result.score), "mean": float(result.mean), "ci": float(result.ci),
                                "p": p}
    return out
