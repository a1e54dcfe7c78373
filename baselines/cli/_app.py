"""The `klue-baselines` command group and its global options; the commands join it from their modules."""
from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import click

from baselines.cli._console import Console, one_line_warnings
from features import analysis


# Each command's module and the first sentence of its docstring (test_cli holds the two together): `--help` lists the
# commands from here, and a command's module is imported only when it runs or is asked for its own help, so that
# the command line starts without the tasks, scikit-learn or Kiwi (`tasks` reads the cards alone).
COMMANDS = {
    "bench": ("baselines.cli.benchmarks", "Benchmarks whose figures go to results/ (not timed tests)."),
    "compare": ("baselines.cli.scores", "Is B's lead over A real, and where? Each headline metric for both, B - A, "
                                        "its 95 % paired bootstrap interval and p-value; then the same per class, "
                                        "entity type, relation, slot or question type, the largest difference "
                                        "first."),
    "doctor": ("baselines.cli.data", "Check that the install works, in under a minute: Python, Kiwi, every task's "
                                     "floor fitted and scored on the shipped sample; then which data and extras are "
                                     "there, and each ready model, loaded (up to about 20 s more for each of STS and "
                                     "NLI trained on the official data)."),
    "download": ("baselines.cli.data", "Fetch and verify the official KLUE v1.1 files (all tasks by default)."),
    "evaluate": ("baselines.cli.models", "Score a model on the dev file with the official metrics."),
    "explain": ("baselines.cli.models", "Show what a model learnt (its strongest features per class or label) and, "
                                        "with --input, why it predicted what it did."),
    "predict": ("baselines.cli.models", "Predict raw or official-format input; one JSON object per record (format "
                                        "in the README)."),
    "report": ("baselines.cli.scores", "Per-class precision, recall, F1 and support, the confusion matrix and the "
                                       "worst errors of anyone's predictions: what a class looks at after the score."),
    "probe": ("baselines.cli.sanity", "How much of the score the data alone gives away: partial-input baselines "
                                      "(NLI from the hypothesis alone, RE from the entity pair alone, ...) trained "
                                      "and scored as `run` scores the default, between the whole input and the "
                                      "trivial floor, each with the share of that gap it closes."),
    "reproduce": ("baselines.cli.benchmarks", "Rerun the commands recorded in results/ (each with an empty cache, "
                                              "into a temporary folder) and show each row's committed and rerun "
                                              "headline scores; exits non-zero on any difference."),
    "run": ("baselines.cli.scores", "Train and evaluate (all tasks by default), print the table and record "
                                    "results/."),
    "score": ("baselines.cli.scores", "Score anyone's predictions against an official file with the official "
                                      "metrics."),
    "serve": ("baselines.cli.serve", "Start the demo page: type a sentence (a pair, a passage and a question, two "
                                     "entities, a dialogue) and see each task's prediction drawn with what pushed "
                                     "it."),
    "tasks": ("baselines.cli.listing", "List the tasks, their models and the files each needs (and which are "
                                       "found)."),
    "train": ("baselines.cli.models", "Train a model on the training file and save it: a metadata header, checked "
                                      "before the model is read, then the model, stored with skops where the "
                                      "secure extra is installed (pip install 'klue-baselines[secure]'), else as a "
                                      "joblib pickle."),
    "tune": ("baselines.cli.scores", "Choose hyper-parameters by cross-validation on the training file (the dev "
                                     "file is never read)."),
}


class LazyCommands(click.Group):
    """A group whose commands are imported when one is asked for, and listed by `--help` from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            importlib.import_module(COMMANDS[name][0])  # its module adds it to this group
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists commands (its own short help of each summary, cut to the width), without importing
        them."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        summaries = {name: COMMANDS[name][1] if name in COMMANDS else self.commands[name].help or "" for name in names}
        rows = [(name, click.Command(name, help=summaries[name]).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="klue-baselines")
@click.option("--quiet", "-q", is_flag=True, help="No progress or status output on stderr.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the morpheme-analysis cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the analysis cache lives (default: $KLUE_BASELINES_CACHE or ~/.cache/klue-baselines).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Kiwi threads (default: all cores).")
@click.pass_context
def main(ctx: click.Context, quiet: bool, no_cache: bool, cache_dir: Path | None, workers: int | None) -> None:
    """Classical, CPU-only baselines for the eight KLUE tasks, scored with the official metrics."""
    ctx.obj = Console(quiet)
    warnings.showwarning = one_line_warnings
    analysis.configure(num_workers=workers, cache_dir=cache_dir, use_cache=False if no_cache else None,
                       progress=None if quiet else ctx.obj.progress)
