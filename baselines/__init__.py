"""klue-baselines: classical, CPU-only baselines for the KLUE benchmark with the official scoring."""
__version__ = "0.1.0"
