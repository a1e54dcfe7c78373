"""The klue-baselines command line: click options over the API, one module per group of commands."""
from baselines.cli._app import main
from baselines.cli import benchmarks, data, models, scores, serve  # each adds its commands to main

__all__ = ["main", "benchmarks", "data", "models", "scores", "serve"]
