"""Colours of the line plots (`sate analyze locality`, `sate latency-plot`) that stay readable at any
number of lines.

Matplotlib's colour cycle has ten colours, and ``C10`` is ``C0`` again: a plot of eleven models, or of two packs
swept over three policies and two chunk sizes (twelve lines), drew two of its lines in one colour and one style, which
nothing in the figure told apart (thirtieth hostile pass). Up to ten lines keep the cycle's colours; more take the
twenty of ``tab20`` (the ten, then their lighter shades), and more than twenty evenly spaced colours of ``turbo``.
"""

from __future__ import annotations


def series_colours(count: int) -> list[str | tuple[float, float, float, float]]:
    """``count`` colours, no two alike: the colour cycle's up to ten (so small plots look as they did), tab20's up
    to twenty, evenly spaced colours of the turbo map beyond."""
    if count <= 10:
        return [f"C{k}" for k in range(count)]
    from matplotlib import colormaps  # heavy: matplotlib, for plots only

    if count <= 20:
        tab20 = colormaps["tab20"]
        return [tab20(2 * k if k < 10 else 2 * (k - 10) + 1) for k in range(count)]
    turbo = colormaps["turbo"]
    return [turbo(0.05 + 0.9 * k / (count - 1)) for k in range(count)]
