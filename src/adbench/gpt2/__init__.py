"""GPT-2 probes (G1-G8, P9): model loading with an offline fallback, and the measurements."""
