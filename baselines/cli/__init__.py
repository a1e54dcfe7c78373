"""The klue-baselines command line: click options over the API, one module per group of commands."""
from baselines.cli._app import main  # its commands are imported from their modules when they are asked for

__all__ = ["main"]
