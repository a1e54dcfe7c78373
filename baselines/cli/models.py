"""Commands for one model: `train` saves it, `evaluate`, `predict` and `explain` use it."""
from __future__ import annotations

import json
from pathlib import Path

import click

from baselines import api
from baselines.cli._console import (_display_width, _print_metrics, _print_table, _shown_input, command_line,
                                    console, friendly_errors)
from baselines.cli._options import (DATA_PATH, OWN_FORMATS, TaskName, data_dir_option, dev_option,
                                    model_name_option, param_option, pos_option, seed_option, task_argument,
                                    train_option)
from baselines.cli._app import main


@main.command()
@click.argument("task", type=TaskName(), required=False)
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Model file to write (default: <task>.joblib).")
@click.option("--all", "all_tasks", is_flag=True,
              help="Train every task's default model into the ready-models folder (--out-dir), for a class.")
@click.option("--out-dir", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --all: the ready-models folder (default: $KLUE_MODELS_DIR, else the per-user cache).")
@data_dir_option
@train_option
@model_name_option
@param_option
@seed_option
@pos_option
@click.pass_context
@friendly_errors
def train(ctx, task: str | None, out_path: Path | None, all_tasks: bool, out_dir: Path | None, data_dir, train_file,
          model_name, params, seed: int, pos) -> None:
    """Train a model on the training file and save it: a metadata header, checked before the model is read,
    then the model, stored with skops where the secure extra is installed (pip install 'klue-baselines[secure]'),
    else as a joblib pickle. Pickled model files can run code when loaded: they load only with --trust-pickle.
    With --all instead of a task: every task's default model, into the folder of ready models that the
    lessons and `serve` use, each scored on its dev file (the folder's README.md records what was done)."""
    if all_tasks:
        given = [flag for flag, value in (("TASK", task), ("--out", out_path), ("--train", train_file),
                                          ("--model", model_name), ("--param", params), ("--pos", pos)) if value]
        if given:
            raise click.UsageError(f"--all trains each task's default model on its own files: leave out "
                                   f"{', '.join(given)}")
        entries = api.train_all(data_dir=data_dir, models_dir=out_dir, seed=seed, command=command_line(),
                                log=console(ctx).log)
        _print_table(["task", "model", "file", "MB", "seconds"],
                     [[e["task"], e["model"], e["file"], f"{e['size_mb']}", f"{e['train_seconds']:.0f}"]
                      for e in entries])
        return
    if task is None:
        raise click.UsageError("give a TASK, or --all for every task's default model")
    if out_dir is not None:
        raise click.UsageError("--out-dir goes with --all; for one task, --out FILE")
    name = api.model_name(task, model_name, pos)
    path = api.train(task, out_path or f"{task}.joblib", name, data_dir=data_dir, train=train_file, seed=seed,
                     log=console(ctx).log, **params)
    click.echo(f"saved {name} model for {task} to {path}")


def saved_model_option(command):
    """--model FILE, and --trust-pickle, the consent that a pickled model file needs."""
    command = click.option("--trust-pickle", is_flag=True,
                           help="Load a model file whose model is a pickle (saved without the secure extra). A "
                                "pickle can run any code when loaded: give this only for files from a trusted "
                                "source.")(command)
    return click.option("--model", "model_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                        default=None, help="Model file from `train` (default: train one on the training data "
                                           "first).")(command)


@main.command()
@task_argument
@saved_model_option
@data_dir_option
@train_option
@dev_option
@param_option
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@click.pass_context
@friendly_errors
def evaluate(ctx, task: str, model_path, trust_pickle: bool, data_dir, train_file, dev_file, params, seed: int,
             as_json: bool) -> None:
    """Score a model on the dev file with the official metrics."""
    record = api.evaluate(task, model_file=model_path, data_dir=data_dir, train=train_file, dev=dev_file, seed=seed,
                          trust_pickle=trust_pickle, log=console(ctx).log, **params)
    _print_metrics(task, record["metrics"], as_json, model=record["model"])


@main.command()
@task_argument
@click.option("--input", "input_path", required=True, type=DATA_PATH,
              help="Official-format file, Hugging Face export, or JSONL of raw inputs (see README).")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSONL to write (default: stdout).")
@saved_model_option
@data_dir_option
@train_option
@param_option
@seed_option
@pos_option
@click.option("--format", "output_format", type=click.Choice(["jsonl", "hf", "html", *OWN_FORMATS]), default="jsonl",
              show_default=True, help="hf: as Hugging Face users keep predictions (no guids, in the input's order, "
                                      "ClassLabel indices); html: a page that draws them (entities, trees, "
                                      "answers); a task's own: "
                                      + ", ".join(f"{name} ({code})" for name, code in OWN_FORMATS.items()) + ".")
@click.pass_context
@friendly_errors
def predict(ctx, task: str, input_path: Path, output_path, model_path, trust_pickle: bool, data_dir, train_file,
            params, seed: int, pos: str | None, output_format: str) -> None:
    """Predict raw or official-format input; one JSON object per record (format in the README)."""
    rows = api.predict_file(task, input_path, output_path, model_file=model_path, data_dir=data_dir,
                            train=train_file, seed=seed, pos=pos, output_format=output_format,
                            trust_pickle=trust_pickle, log=console(ctx).log, **params)
    if output_path is None:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))


@main.command()
@task_argument
@saved_model_option
@click.option("--top", "top_k", default=10, show_default=True, type=click.IntRange(min=1),
              help="Features shown per class or label.")
@click.option("--input", "input_path", type=DATA_PATH, default=None,
              help="Also explain each prediction on this file (official format or raw JSONL): the features that "
                   "pushed it most.")
@data_dir_option
@train_option
@param_option
@seed_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
@click.pass_context
@friendly_errors
def explain(ctx, task: str, model_path, trust_pickle: bool, top_k: int, input_path, data_dir, train_file, params,
            seed: int, as_json: bool) -> None:
    """Show what a model learnt (its strongest features per class or label) and, with --input, why it
    predicted what it did."""
    if model_path is None:  # refused before any training, not after it
        api.check_explainable(task, api.make_model(task, data_dir=data_dir, **params), input_path is not None)
    model = api.saved_or_fitted(task, model_path, data_dir=data_dir, train=train_file, seed=seed,
                                trust_pickle=trust_pickle, log=console(ctx).log, **params)
    explanation = api.explain(task, model, top_k, input_path, per_input=top_k)
    if as_json:
        click.echo(json.dumps(explanation, ensure_ascii=False, indent=2))
        return
    for section, weights in explanation["sections"].items():
        click.echo(section)
        for weight in weights:
            click.echo(f"  {weight['weight']:+9.4f}  {weight['feature']}")
    for example in explanation.get("examples", []):
        click.echo(f"\n{example['guid']}: {_shown_input(example['input'])}")
        if "characters" in example:  # NER: why each character got its tag
            for character in example["characters"]:
                shown = character["character"] if character["character"].strip() else "(space)"
                pushed = "; ".join(f"{item['feature']} {item['weight']:+.2f}" for item in character["features"])
                click.echo(f"  {shown}{' ' * (7 - _display_width(shown))}  {character['tag']:<5}  {pushed}")
            continue
        click.echo(f"  -> {example['prediction']}")
        for weight in example["features"]:
            click.echo(f"  {weight['weight']:+9.4f}  {weight['feature']}")
