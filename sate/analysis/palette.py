"""Colours and legends of the line plots (`sate analyze locality`, `sate latency-plot`) that stay readable at any
number of lines.

Matplotlib's colour cycle has ten colours, and ``C10`` is ``C0`` again: a plot of eleven models, or of two packs
swept over three policies and two chunk sizes (twelve lines), drew two of its lines in one colour and one style, which
nothing in the figure told apart (thirtieth hostile pass). Up to ten lines keep the cycle's colours; more take the
twenty of ``tab20`` (the ten, then their lighter shades), and more than twenty evenly spaced colours of ``turbo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib: imported when a plot is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# a legend of more entries than this is drawn beside the axes, not over them
LEGEND_INSIDE = 10
LEGEND_GAP = 1.55  # a legend entry's height in font sizes (matplotlib's label spacing 0.5 + the text)
LEGEND_WIDTH = 3.5  # inches added to the figure's width for a legend beside the axes


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


def place_legend(fig: Figure, ax: Axes, fontsize: float) -> None:
    """The legend inside the axes where it is short; beside them, the figure grown to hold it, where it is long: a
    legend of twenty entries covered the lines and the x axis, and one of more was cut at the figure's edge, lines
    drawn that it did not name (thirtieth hostile pass)."""
    entries = len(ax.get_legend_handles_labels()[1])
    if entries <= LEGEND_INSIDE:
        ax.legend(fontsize=fontsize)
        return
    width, height = fig.get_size_inches()
    fig.set_size_inches(width + LEGEND_WIDTH, max(height, 1.0 + entries * LEGEND_GAP * fontsize / 72))
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
