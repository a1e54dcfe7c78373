"""The options and arguments that several commands take, declared once."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import click

from baselines.data import cards
from baselines.runner import tuning
from baselines.runner.registry import TASK_CODES, UnknownTask, task_code
from baselines.runtime import parallel


class TaskName(click.ParamType):
    """A task code in any case; an unknown one fails with the closest code."""
    name = "task"

    def get_metavar(self, *args, **kwargs) -> str:
        return "{" + "|".join(TASK_CODES) + "}"

    def convert(self, value, param, ctx):
        try:
            return task_code(value)
        except UnknownTask as error:
            self.fail(str(error), param, ctx)


# Eager: the task is checked before any file option, so a misspelt task is what the user hears about.
task_argument = click.argument("task", type=TaskName(), is_eager=True)
data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
                               help="Folder with the KLUE files (default: $KLUE_DATA_DIR, then the download "
                                    "cache, then the shipped sample).")
# Data files may be official files or Hugging Face exports (JSON Lines, parquet, or a save_to_disk folder).
DATA_PATH = click.Path(exists=True, path_type=Path)
train_option = click.option("--train", "train_file", type=DATA_PATH,
                            help="Training file instead of the official one (a partial copy, or a Hugging Face "
                                 "export).")
dev_option = click.option("--dev", "dev_file", type=DATA_PATH,
                          help="Evaluation file instead of the official dev file (or a Hugging Face export).")
seed_option = click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
                           help="Random seed of models and folds (0 to 2^32-1).")
# The choices that the tasks declare (TaskSpec.modelling.model_for_pos, PredictionFiles.writers), not spelled here:
# read from their cards, which say the same, so that no task is imported to build the options. Read before any command
# runs:
# a registry problem (a clashing third-party task) is left to the command, which says it in one line
# (cli._console.friendly_errors), so these do not check for it as cards.all_cards does.
_LISTINGS = {code: cards.card_of(code).listing for code in TASK_CODES}
POS_MODELS = {pos: f"{code} {name}" for code, listing in _LISTINGS.items() for pos, name in listing.pos_models.items()}
OWN_FORMATS = {name: code for code, listing in _LISTINGS.items() for name in listing.prediction_writers}
pos_option = click.option("--pos", type=click.Choice(sorted(POS_MODELS)), default=None,
                          help="A parsing task's model by the POS tags it reads, the data's (gold, the default) or "
                               "Kiwi's (kiwi): " + ", ".join(f"{pos} -> {model}" for pos, model in POS_MODELS.items()))


def _assignments(_ctx, _param, values) -> dict:
    try:
        return tuning.parse_assignments(values)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


param_option = click.option("--param", "params", multiple=True, callback=_assignments,
                            help="NAME=VALUE: a hyper-parameter of the model, set over its default (value as "
                                 "JSON). Repeat for several.")


def _folds(_ctx, _param, value: int) -> int:
    if value == 1:
        raise click.BadParameter("1 fold leaves nothing to train on: give 0 (no cross-fitting) or at least 2")
    return value


cv_option = click.option("--cv", default=0, type=click.IntRange(min=0), callback=_folds,
                         help="Cross-fit K >= 2 folds over the evaluation file (keeping a task's passages or "
                              "dialogues whole); the training file, if any, joins every fold.")
model_name_option = click.option("--model", "model_name", default=None,
                                 help="Model to train: the task's default (its most accurate), 'fast' for "
                                      "speed, or 'trivial' for the floor.")


plots_option = click.option(
    "--plots", "plots_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Also draw the figures as PNG files in this folder (needs the plots extra: "
         'pip install "klue-baselines[plots]").')


def _backend(_ctx, _param, value: str) -> str:
    try:
        parallel.Workers(backend=value)
    except parallel.BackendError as error:
        raise click.BadParameter(str(error)) from None
    return value


jobs_option = click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
                           help="Fits (cross-fitting folds, tuning trials) to run at once; the scores do not "
                                "change.")
backend_option = click.option("--backend", default="loky", show_default=True, callback=_backend,
                              help="joblib backend of --jobs: loky (processes on this machine), threading, or "
                                   "dask or ray for a cluster (extra [cluster]; $DASK_SCHEDULER_ADDRESS, "
                                   "$RAY_ADDRESS).")


def evaluation_options(command: Callable) -> Callable:
    """The options that say what `run` and `bench learning-curve` train and evaluate, in this order."""
    for option in reversed((model_name_option, param_option, data_dir_option, train_option, dev_option, cv_option,
                            seed_option, jobs_option, backend_option)):
        command = option(command)
    return command


# The tasks a command works on, each in any case (all of them when none is given).
task_codes_argument = click.argument("task_codes", nargs=-1, type=TaskName(), is_eager=True)
RESULTS = Path("results")


def results_dir_option(default: Path | None = RESULTS, exists: bool = False, help: str | None = None):
    """--results-dir: the folder a command writes its files of results/ to (exists: one it reads them from)."""
    return click.option("--results-dir", type=click.Path(file_okay=False, exists=exists, path_type=Path),
                        default=default, show_default=default is not None, help=help)
