"""adbench: re-measure how backpropagation works and compare with the documented figures."""

__version__ = "0.1.0"
