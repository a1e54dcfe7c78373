"""Benchmarks whose figures go to results/ (analysis, scale, peers, budget, determinism, long inputs) and reproduce."""
from baselines import _moved

# The analysis benchmark's functions, which baselines.bench held before it became this folder, still reach it from
# here, warned.
__getattr__ = _moved.moved_out(__name__)
