"""The official metrics, as scores and as per-record tallies, their significance, and the teaching report."""
