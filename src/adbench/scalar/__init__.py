"""Scalar family (S1-S10): a micrograd-style tape, numerical derivatives, forward mode."""
