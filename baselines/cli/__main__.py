"""`python -m baselines.cli`: the command line, as the `klue-baselines` script runs it."""
from baselines.cli import main

main(prog_name="klue-baselines")
