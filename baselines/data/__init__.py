"""Data in and out: safe file reading and writing, where data comes from, Hugging Face exports, formats."""
