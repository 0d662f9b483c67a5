"""The run report's charts, drawn with matplotlib and returned as inline SVG.

Every function takes plain Python data (no DataFrames), draws one figure with
the non-interactive Agg/SVG backend, and returns the ``<svg …>…</svg>`` text
ready to be placed in an HTML page: no XML declaration, no DOCTYPE, no
external reference (fonts are drawn as paths, so the SVG needs no font file
and looks the same offline). A chart with nothing to draw returns None; the
page then says why instead.

matplotlib is imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import io
import re
from typing import Any, Iterable, Mapping, Sequence

#: Colours (colour-blind safe, Okabe-Ito)
BLUE, ORANGE, GREEN, RED, GREY, PURPLE = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#999999", "#CC79A7"
WIDTH = 7.0  # inches at 96 dpi ≈ 670 px


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)  # never a GUI backend inside a worker
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def to_svg(fig, title: str) -> str:
    """``fig`` as inline SVG text with an accessible ``<title>``; closes the figure."""
    plt = _pyplot()
    buf = io.StringIO()
    plt.rcParams["svg.hashsalt"] = title  # element ids differ between the charts of one page
    try:
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML declaration and the DOCTYPE (with its DTD URL)
    safe = (title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    svg = re.sub(r"<svg\b([^>]*)>", lambda m: f'<svg{m.group(1)} role="img" aria-label="{safe}"><title>{safe}</title>',
                 svg, count=1)
    return svg


def rows_chart(rows: Mapping[str, Any]) -> str | None:
    """Rows in, quarantined (stacked by reason), curated, loaded and published.

    Args:
        rows: the run summary's ``rows`` (``in``, ``quarantined``,
            ``quarantined_by_reason``, ``curated``, ``loaded``, ``published``;
            None where a task did not run).
    """
    stages = [("rows in", rows.get("in")), ("quarantined", rows.get("quarantined")),
              ("curated", rows.get("curated")), ("loaded (staging)", rows.get("loaded")),
              ("published", rows.get("published"))]
    if all(v is None for _, v in stages):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6))
    labels = [name for name, _ in stages]
    y = list(range(len(stages)))[::-1]
    reasons = {k: v for k, v in (rows.get("quarantined_by_reason") or {}).items() if v}
    palette = [RED, ORANGE, PURPLE, "#F0E442", "#56B4E9", GREY]
    for yi, (name, value) in zip(y, stages):
        if value is None:
            ax.text(0, yi, "  did not run", va="center", color=GREY)
            continue
        if name == "quarantined" and reasons:
            left = 0
            for i, (reason, n) in enumerate(sorted(reasons.items(), key=lambda kv: -kv[1])):
                ax.barh(yi, n, left=left, color=palette[i % len(palette)], label=f"{reason} ({n:,})")
                left += n
        else:
            ax.barh(yi, value, color=RED if name == "quarantined" else (GREEN if name == "published" else BLUE))
        ax.text(value, yi, f" {value:,}", va="center")
    ax.set_yticks(y, labels)
    ax.set_xlabel("rows")
    ax.margins(x=0.15)
    if reasons:
        ax.legend(title="quarantined by reason", loc="lower right", fontsize=8, title_fontsize=8, frameon=False)
    return to_svg(fig, "Rows in, quarantined, curated, loaded and published")


def size_distribution_chart(sizes: Mapping[int, int], what: str = "cluster") -> str | None:
    """How many clusters (or entities) have each size.

    Args:
        sizes: size (references per cluster) → number of clusters of that size.
        what: "cluster" or "entity", for the labels.
    """
    sizes = {int(k): int(v) for k, v in sizes.items() if v}
    if not sizes:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6))
    xs = sorted(sizes)
    few = len(xs) <= 25  # one labelled bar per size; else a plain numeric axis
    pos = list(range(len(xs))) if few else xs
    ax.bar(pos, [sizes[x] for x in xs], color=BLUE)
    if few:
        ax.set_xticks(pos, [str(x) for x in xs])
        for p, x in zip(pos, xs):
            ax.annotate(f"{sizes[x]:,}", (p, sizes[x]), ha="center", va="bottom", fontsize=7)
    if max(sizes.values()) > 20 * max(1, min(sizes.values())):
        ax.set_yscale("log")
    ax.set_xlabel(f"{what} size (references)")
    ax.set_ylabel("entities" if what == "entity" else f"{what}s")
    return to_svg(fig, f"{what.capitalize()} size distribution")


def score_histogram(accepted: Sequence[float], close_calls: Sequence[float],
                    mus: Mapping[int, float]) -> str | None:
    """Histogram of pair scores, links (accepted) and close calls (below mu)
    stacked, with each iteration's ``mu`` marked.

    Args:
        accepted: scores of the links inside accepted clusters.
        close_calls: scores of the rejected pairs near mu.
        mus: iteration → its mu (only the iterations that have pairs are marked).
    """
    if not accepted and not close_calls:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH - 1.6, 2.8))
    values = list(accepted) + list(close_calls)
    lo, hi = min(values + list(mus.values() or [0])), max(values + list(mus.values() or [1]))
    lo, hi = min(lo, hi - 0.05), max(hi, lo + 0.05)
    bins = [lo + (hi - lo) * i / 40 for i in range(41)]
    ax.hist([list(close_calls), list(accepted)], bins=bins, stacked=True, color=[ORANGE, BLUE],
            label=[f"close calls below mu ({len(close_calls):,})", f"links ({len(accepted):,})"])
    styles = ["--", ":", "-.", "-"]
    for i, (it, mu) in enumerate(sorted(mus.items())):
        ax.axvline(mu, color="#1b1f24", linestyle=styles[i % len(styles)], linewidth=1.3,
                   label=f"mu = {mu:.2f} (iteration {it})")
    if accepted and close_calls and max(len(accepted), len(close_calls)) > 20 * min(len(accepted), len(close_calls)):
        ax.set_yscale("log")  # else the smaller group is invisible
    ax.set_xlabel("pair score")
    ax.set_ylabel("pairs")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: never over mu
    return to_svg(fig, "Histogram of pair scores with mu marked")


def seconds_chart(seconds: Mapping[str, Any]) -> str | None:
    """Wall seconds per task (tasks that did not run are left out)."""
    items = [(k, float(v)) for k, v in seconds.items() if isinstance(v, (int, float))]
    if not items:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 0.45 * len(items) + 0.8))
    names = [k for k, _ in items][::-1]
    vals = [v for _, v in items][::-1]
    ax.barh(names, vals, color=BLUE)
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:,.1f} s", va="center")
    ax.set_xlabel("seconds")
    ax.margins(x=0.15)
    return to_svg(fig, "Seconds per task")


def trend_chart(history: Iterable[Mapping[str, Any]]) -> str | None:
    """The last nights side by side: rows in, new entities, merges, quarantined
    share, pairwise F1 (when truth is known: the night's own and the entity
    registry's after the night) and total seconds.

    Args:
        history: one dict per night, oldest first, from :func:`washline.report_html.trend_point`:
            ``ds``, ``published`` (bool), ``rows_in``, ``new_entities``,
            ``merges``, ``quarantined_share``, ``f1``, ``registry_f1``, ``seconds``;
            None where unknown or undefined.
    """
    nights = list(history)
    if not nights:
        return None
    plt = _pyplot()
    panels = [("rows_in", "rows in", BLUE), ("new_entities", "new entities", GREEN), ("merges", "merges", PURPLE),
              ("quarantined_share", "quarantined share", RED), ("f1", "pairwise F1", ORANGE),
              ("seconds", "seconds (all tasks)", GREY)]
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH * 1.35, 4.2), sharex=True)
    x = list(range(len(nights)))
    labels = [n["ds"][5:] for n in nights]  # MM-DD
    # the F1 panel holds two series: the night's own figure and the entity registry's after the night
    series = {"f1": [("f1", "night", ORANGE, "-"), ("registry_f1", "entity registry", GREEN, "--")]}
    for ax, (key, title, colour) in zip(axes.flat, panels):
        ax.set_title(title, fontsize=9)
        drawn = 0
        for skey, label, scolour, style in series.get(key, [(key, None, colour, "-")]):
            pts = [(i, n.get(skey)) for i, n in zip(x, nights) if isinstance(n.get(skey), (int, float))]
            if not pts:
                continue
            drawn += 1
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, color=scolour,
                    linestyle=style, label=label)
            bad = [(i, n.get(skey)) for i, n in zip(x, nights)
                   if not n.get("published") and isinstance(n.get(skey), (int, float))]
            if bad:
                ax.scatter([b[0] for b in bad], [b[1] for b in bad], marker="x", color=RED, zorder=3, s=30)
        if key in series and drawn:
            ax.legend(fontsize=7, loc="lower right")
        if not drawn:
            known = any(n.get("f1_why") or n.get("registry_f1_why") for n in nights)
            empty = "no data" if key != "f1" else ("undefined (n/a) in every night" if known else "no truth known")
            ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center", color=GREY)
        if key in ("quarantined_share", "f1"):
            ax.set_ylim(0, 1.02 if key == "f1" else None)
    step = max(1, len(x) // 8)
    for ax in axes[1]:
        ax.set_xticks(x[::step], labels[::step], rotation=45, fontsize=7)
    fig.suptitle(f"The last {len(nights)} night(s) (x: not published)", fontsize=9)
    fig.tight_layout()
    return to_svg(fig, f"Trend over the last {len(nights)} nights")
