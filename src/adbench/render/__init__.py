"""Rendering: report/report.html and report/history.html from the jinja2 templates beside this file.

Import-light (no jinja2 here): the rules files read TEMPLATES at parse time."""

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
