"""Optimization family (O1-O3): XOR on the scalar tape, an ill-conditioned quadratic, optimizer memory."""
