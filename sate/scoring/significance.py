"""Which differences are real: 95% confidence intervals and paired bootstrap p-values, from sacreBLEU.

Both use sacreBLEU's own bootstrap (1,000 resamples, its fixed seed 12345 unless SACREBLEU_SEED says
otherwise), so the figures equal `sacrebleu REF -i HYP --confidence` and `sacrebleu REF -i BASE OTHER
--paired-bs`. A confidence interval is given as sacreBLEU prints it: mean ± half the width of the
95% interval of the resampled scores. A p-value is roughly the chance of a difference to the baseline
this large arising if both systems came from the same process; below 0.05 the difference is taken as
real (it says that the systems differ, not which is better: the scores say that).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sate.errors import SateError

RESAMPLES = 1000
METRICS = {"bleu": "BLEU", "chrf": "chrF2"}  # our key -> sacreBLEU's name in PairedTest results


def _metrics() -> dict[str, Any]:
    from sacrebleu.metrics import BLEU, CHRF  # slow: sacrebleu (0.3 s)

    return {"BLEU": BLEU(), "chrF2": CHRF()}


def confidence(hyps: Sequence[str], refs: Sequence[str]) -> dict[str, dict[str, float]]:
    """{"bleu": {"mean", "ci"}, "chrf": {...}}: the bootstrap mean and half-width of the 95% interval."""
    if len(hyps) != len(refs) or not refs:
        raise SateError(f"{len(hyps)} hypotheses for {len(refs)} references: nothing to resample")
    metrics = _metrics()
    out = {}
    for key, name in METRICS.items():
        score = metrics[name].corpus_score(list(hyps), [list(refs)], n_bootstrap=RESAMPLES)
        out[key] = {"mean": float(score._mean), "ci": float(score._ci)}
    out["signature"] = {key: metrics[name].get_signature().format() for key, name in METRICS.items()}
    return out


def paired_bootstrap(systems: Sequence[tuple[str, Sequence[str]]], refs: Sequence[str]) -> dict[str, dict]:
    """name -> {"bleu": {"score", "mean", "ci", "p"}, "chrf": {...}}; the first system is the baseline (p None)."""
    from sacrebleu.significance import PairedTest  # slow: sacrebleu (0.3 s)

    if len(systems) < 2:
        raise SateError("a paired test needs a baseline and at least one other system")
    for name, hyps in systems:
        if len(hyps) != len(refs):
            raise SateError(f"{name}: {len(hyps)} hypotheses for {len(refs)} references")
    _, scores = PairedTest([(n, list(h)) for n, h in systems], _metrics(), [list(refs)], test_type="bs",
                           n_samples=RESAMPLES)()
    out: dict[str, dict] = {name: {} for name, _ in systems}
    for key, name in METRICS.items():
        for (system, _), result in zip(systems, scores[name], strict=True):
            out[system][key] = {"score": float(result.score), "mean": float(result.mean), "ci": float(result.ci),
                                "p": None if result.p_value is None else float(result.p_value)}
    return out
