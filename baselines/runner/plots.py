"""Figures for a class: confusion heat maps, F1 per class beside chance, learning curves and the results chart.

Drawn with matplotlib and the NanumGothic font that the `koreanize-matplotlib` package ships, both from the
`plots` extra, so that Hangul labels render. Figures are drawn on their own `Figure` objects, never through
pyplot, so that a notebook's backend and settings are left as they were; the font is set only while a figure
is drawn and written.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from baselines.data.fileio import atomic_output
from baselines.errors import PlotsUnavailable

EXTRA_HINT = 'figures need the plots extra: pip install "klue-baselines[plots]"'
FONT_PACKAGE, FONT_FILE, FONT_FAMILY = "koreanize_matplotlib", "fonts/NanumGothic.ttf", "NanumGothic"

# One colour per role across every figure, from matplotlib's default cycle, so a slide series stays coherent.
OURS, FLOOR, MBERT, ROBERTA = "tab:blue", "0.55", "tab:orange", "tab:red"


def _font_path() -> Path:
    # find_spec locates the font package without importing it: importing koreanize_matplotlib changes
    # matplotlib's global settings, and needs distutils, which Python 3.12 no longer has.
    spec = importlib.util.find_spec(FONT_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / FONT_FILE
        if path.is_file():
            return path
    raise PlotsUnavailable(f"the NanumGothic font (package koreanize-matplotlib) is not installed: {EXTRA_HINT}")


def check_available() -> None:
    """PlotsUnavailable unless matplotlib and the Korean font are installed: checked before any long work."""
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotsUnavailable(f"matplotlib is not installed: {EXTRA_HINT}")
    _font_path()


def use_korean_font() -> str:
    """Make NanumGothic matplotlib's font for the rest of the process, and the minus sign a hyphen (the font has
    no U+2212), so that a user's own figures show Hangul, not boxes. Returns the font's family name."""
    check_available()
    import matplotlib
    from matplotlib import font_manager

    path = str(_font_path())
    if not any(entry.fname == path for entry in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(path)
    matplotlib.rcParams["font.family"] = FONT_FAMILY
    matplotlib.rcParams["axes.unicode_minus"] = False
    return FONT_FAMILY


@contextlib.contextmanager
def _korean_text() -> Iterator[Any]:
    """matplotlib's Figure class, with NanumGothic as the font while the block draws and saves."""
    check_available()
    import matplotlib
    from matplotlib import font_manager
    from matplotlib.figure import Figure

    path = str(_font_path())
    if not any(entry.fname == path for entry in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(path)
    # NanumGothic has no U+2212 minus sign: negative tick labels use the ASCII hyphen instead.
    with matplotlib.rc_context({"font.family": FONT_FAMILY, "axes.unicode_minus": False}):
        yield Figure


def _save(figure: Any, path: Path, data: Any = None) -> Path:
    """Write the figure as PNG, whole or not at all. No software tag, so a rerun writes the same bytes. `data`,
    where given, goes into the file as JSON (the PNG's Description), so that a test can tell what it shows."""
    buffer = io.BytesIO()
    metadata = {"Software": None}
    if data is not None:
        metadata["Description"] = json.dumps(data, sort_keys=True)  # ASCII: PNG text is Latin-1
    figure.savefig(buffer, format="png", dpi=150, bbox_inches="tight", metadata=metadata)
    with atomic_output(path, "wb") as handle:
        handle.write(buffer.getvalue())
    return path


def figure_data(path: Path) -> Any:
    """The data a figure of this module was drawn from, as _save kept it in the PNG; None if it kept none."""
    from PIL import Image  # matplotlib's own dependency

    with Image.open(path) as image:
        text = image.text.get("Description")
    return None if text is None else json.loads(text)


def confusion_heatmap(labels: Sequence[str], matrix: Sequence[Sequence[int]], title: str, path: Path) -> Path:
    """Rows gold, columns predicted. The colour is each cell's share of its gold row, so that a rare class's
    errors show as clearly as a frequent one's (the diagonal is the recall); the number is the count."""
    import numpy as np

    counts = np.asarray(matrix, dtype=float).reshape(len(labels), len(labels))
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    size = len(labels)
    side = min(18.0, max(5.0, 0.42 * size + 2.5))
    with _korean_text() as Figure:
        figure = Figure(figsize=(side + 1.2, side))
        axes = figure.add_subplot()
        image = axes.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
        colour_bar = figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
        colour_bar.set_label("share of the gold row (the diagonal is the recall)")
        axes.set_xticks(range(size), labels=list(labels), rotation=45 if size <= 12 else 90,
                        ha="right" if size <= 12 else "center", rotation_mode="anchor" if size <= 12 else "default")
        axes.set_yticks(range(size), labels=list(labels))
        axes.set_xlabel("predicted")
        axes.set_ylabel("gold")
        axes.set_title(title)
        font_size = 10 if size <= 10 else 7 if size <= 25 else 6
        for row in range(size):
            for column in range(size):
                if counts[row, column]:
                    axes.text(column, row, f"{counts[row, column]:.0f}", ha="center", va="center",
                              fontsize=font_size, color="white" if shares[row, column] > 0.55 else "black")
        return _save(figure, path)


def chance_f1(classes: Sequence[dict]) -> list[float]:
    """Each class's F1 (x100) for a guess that draws labels at their gold rates: its precision and its
    recall are both the class's share of the gold units, so that share is the F1 to beat."""
    total = sum(row["support"] for row in classes)
    return [100.0 * row["support"] / total if total else 0.0 for row in classes]


def f1_bars(classes: Sequence[dict], title: str, path: Path) -> Path:
    """Horizontal bars of F1 per class, best at the top, each beside the chance F1 of its class (see
    chance_f1), with its support in the label: the weak classes are the ones at the bottom."""
    ordered = sorted(zip(classes, chance_f1(classes)), key=lambda pair: (-pair[0]["f1"], pair[0]["label"]))
    size = len(ordered)
    with _korean_text() as Figure:
        figure = Figure(figsize=(7.5, max(2.5, 0.42 * size + 1.3)), layout="constrained")
        axes = figure.add_subplot()
        rows = list(range(size))
        axes.barh([r - 0.2 for r in rows], [row["f1"] for row, _ in ordered], height=0.4, color=OURS, label="F1")
        axes.barh([r + 0.2 for r in rows], [chance for _, chance in ordered], height=0.4, color=FLOOR,
                  label="chance (a guess at the gold rates)")
        for r, (row, _chance) in zip(rows, ordered):
            axes.text(row["f1"] + 1, r - 0.2, f"{row['f1']:.1f}", va="center", fontsize=8)
        axes.set_yticks(rows, labels=[f"{row['label']} (n={row['support']})" for row, _ in ordered])
        axes.invert_yaxis()
        axes.set_xlim(0, 108)
        axes.set_xlabel("F1 (x100)")
        axes.set_title(title)
        figure.legend(loc="outside lower center", ncol=2, fontsize=8, frameon=False)
        return _save(figure, path)


def learning_curve(report: dict, path: Path) -> Path:
    """Each headline score against the training records per fit; with cross-fitting, a band of one standard
    deviation of the per-fold scores around it (the spread a reader should expect between splits)."""
    import numpy as np

    points = report["points"]
    sizes = [float(np.mean(point["trained_on"])) for point in points]
    with _korean_text() as Figure:
        figure = Figure(figsize=(7, 4.5))
        axes = figure.add_subplot()
        spread = False
        for metric in points[0]["headline"]:
            scores = [point["headline"].get(metric) for point in points]
            line, = axes.plot(sizes, [np.nan if s is None else s for s in scores], marker="o", label=metric)
            folds = [[fold.get(metric) for fold in point.get("fold_headline", [])] for point in points]
            if all(scores_of_fold and None not in scores_of_fold for scores_of_fold in folds):
                means = np.array([np.mean(f) for f in folds])
                deviations = np.array([np.std(f) for f in folds])
                axes.fill_between(sizes, means - deviations, means + deviations, color=line.get_color(), alpha=0.2,
                                  linewidth=0)
                spread = True
        axes.set_xlabel("training records per fit")
        if min(sizes) > 0 and max(sizes) >= 4 * min(sizes):
            # Doubling steps are equal steps: a curve still rising as much per doubling is a straight line,
            # and one that flattens shows it (shares such as 1/8, 1/4, 1/2, 1 are then evenly spaced).
            axes.set_xscale("log", base=2)
            axes.set_xticks(sizes, [f"{size:,.0f}" for size in sizes])
            axes.set_xlabel("training records per fit (log scale)")
        axes.set_ylabel("score (x100)")
        folds = report.get("cv_folds") or 0
        note = (f"; band: ±1 s.d. over {folds} folds" if spread else
                f"; {folds} folds pooled (no per-fold scores kept)" if folds else "; one split, no spread")
        axes.set_title(f"{report['task'].upper()} {report['model']}: learning curve{note}", fontsize=10)
        axes.grid(alpha=0.3)
        axes.legend()
        return _save(figure, path)


def results_chart(rows: Sequence[dict], path: Path) -> Path:
    """One line per task and headline metric, from the trivial floor to the strongest neural anchor, with our
    score on it: where the classical baseline stands in the range a class cares about. The rows are kept in
    the file (figure_data reads them back)."""
    size = len(rows)
    with _korean_text() as Figure:
        figure = Figure(figsize=(8, max(2.5, 0.36 * size + 1.6)), layout="constrained")
        axes = figure.add_subplot()
        roles = (("floor", FLOOR, "x", "trivial floor"), ("mbert", MBERT, "o", "mBERT-base (test)"),
                 ("roberta", ROBERTA, "s", "KLUE-RoBERTa-large (test)"), ("ours", OURS, "D", "klue-baselines"))
        for r, row in enumerate(rows):
            known = [row[key] for key, *_ in roles if row.get(key) is not None]
            if known:
                axes.plot([min(known), max(known)], [r, r], color="0.8", linewidth=3, zorder=1)
        for key, colour, marker, label in roles:
            placed = [(row[key], r) for r, row in enumerate(rows) if row.get(key) is not None]
            if placed:
                # The floor's 'x' has no face to fill; the anchors are hollow, ours filled, to stand out.
                style = {"color": colour} if key in ("ours", "floor") else {"color": "white", "edgecolors": colour}
                axes.scatter([x for x, _ in placed], [y for _, y in placed], marker=marker,
                             s=60 if key == "ours" else 40, zorder=3, label=label, **style)
        axes.set_yticks(range(size), labels=[f"{row['task'].upper()} {row['metric']}" for row in rows])
        axes.invert_yaxis()
        axes.set_xlim(0, 100)
        axes.set_xlabel("score (x100; ours on dev, anchors on the KLUE test set)")
        axes.grid(axis="x", alpha=0.3)
        figure.legend(loc="outside lower center", ncol=4, fontsize=8, frameon=False)
        axes.set_title("klue-baselines between the trivial floor and the neural anchors")
        return _save(figure, path, data=list(rows))


def scale_chart(reports: Sequence[dict], path: Path, budget_seconds: float) -> Path:
    """Fit + predict seconds against training records on log-log axes, one line per task (from results/scale/):
    the slope is the growth exponent k of time ~ n^k (the legend's, of fit + predict), and the dotted line is
    the budget of seconds per task."""
    with _korean_text() as Figure:
        figure = Figure(figsize=(7, 4.5), layout="constrained")
        axes = figure.add_subplot()
        for report in reports:
            points = report["points"]
            axes.plot([p["train_records"] for p in points], [p["seconds"]["fit"] + p["seconds"]["predict"]
                                                             for p in points], marker="o",
                      label=f"{report['task'].upper()} (k={report['fit_predict_exponent']})")
        axes.axhline(budget_seconds, color="0.5", linestyle=":", label=f"budget: {budget_seconds / 60:g} minutes")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("training records (1/8 to 1x the official train file)")
        axes.set_ylabel("fit + predict seconds")
        axes.set_title("Time against training size (time ~ n^k)", fontsize=10)
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8)
        return _save(figure, path)


def peers_chart(reports: Sequence[dict], path: Path) -> Path:
    """Each task's first headline metric against its median seconds (log scale), one panel per task and one point
    per system (the peer, our default, our fast model), from results/peers.json: a point up and to the left of
    the peer's is ahead on both axes."""
    markers = {"peer": ("s", MBERT), "default": ("o", OURS), "fast": ("^", "tab:green")}
    names = {"peer": "peer", "default": "ours, default", "fast": "ours, fast"}
    with _korean_text() as Figure:  # first: it says which extra to install when matplotlib is missing
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        columns = min(3, max(1, len(reports)))
        rows = -(-len(reports) // columns)
        figure = Figure(figsize=(3.4 * columns, 2.9 * rows), layout="constrained")
        for index, report in enumerate(reports, start=1):
            axes = figure.add_subplot(rows, columns, index)
            metric = next(iter(report["systems"]["peer"]["metrics"]))
            for who, system in report["systems"].items():
                marker, colour = markers[who]
                seconds, score = system["total_seconds"]["median"], system["metrics"][metric]
                axes.scatter([seconds], [score], marker=marker, color=colour, s=50, zorder=3,
                             label=f"{names[who]}: {system['name'].removeprefix('klue-baselines ')}")
                axes.errorbar([seconds], [score], xerr=[[seconds - system["total_seconds"]["min"]],
                                                        [system["total_seconds"]["max"] - seconds]],
                              color=colour, capsize=2, linewidth=1)
            axes.set_xscale("log")
            # Plain seconds at 1, 2 and 5 times each power of ten (matplotlib's own 3x10^1 labels run together).
            axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
            axes.xaxis.set_minor_formatter(NullFormatter())
            axes.set_title(f"{report['task'].upper()}", fontsize=10)
            axes.set_xlabel("seconds (median of runs, range)", fontsize=8)
            axes.set_ylabel(metric, fontsize=8)
            axes.grid(alpha=0.3, which="both")
            axes.legend(fontsize=6.5, loc="best")
        figure.suptitle("Against the tools a user would pick instead: up and to the left is ahead", fontsize=11)
        return _save(figure, path)
