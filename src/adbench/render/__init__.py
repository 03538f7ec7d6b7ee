"""Rendering: report/report.html and report/history.html from the jinja2 templates.

The core templates sit beside this file; each family's report section, and any file it includes, sits in the
family's own folder (src/adbench/<family>/section.html.j2), named there as `<family>/<file>` and declared in its
family.py (`templates`).
Import-light (no jinja2 here): the rules files read these paths at parse time."""

from pathlib import Path

from ..families import SECTION, declared

TEMPLATES = Path(__file__).resolve().parent / "templates"
PACKAGE = TEMPLATES.parents[1]  # src/adbench: family templates are named relative to it
TEMPLATE_SUFFIXES = (".j2", ".js", ".css")


def section(family: str) -> str:
    """The template name of a family's report section."""
    return f"{family}/{SECTION}"


def template_files() -> list[Path]:
    """Every file a page is rendered from: the core templates and the templates each family declares."""
    core = [p for p in TEMPLATES.rglob("*") if p.suffix in TEMPLATE_SUFFIXES]
    families = [PACKAGE / f.key / name for f in declared() for name in f.templates]
    return sorted(core + families)
