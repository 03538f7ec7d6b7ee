"""History: archived runs, what moved between two runs (numbers and timing samples), the history table."""
