"""L family: gradient accumulation, graph and saved-value lifetimes, activation memory."""
