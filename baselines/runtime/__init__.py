"""The process the work runs in: progress, peak memory, provenance of results, parallel workers."""
