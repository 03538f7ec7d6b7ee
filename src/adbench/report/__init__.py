"""Comparison and HTML report rendering."""
