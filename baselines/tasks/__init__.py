"""One module per KLUE task: record types, loader, models, prediction format and scorer."""
