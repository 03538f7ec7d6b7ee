"""Version matrix: one environment per entry of config `matrix`, a pipeline run in each, and a history."""
