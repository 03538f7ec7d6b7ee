"""Claims: the documents' conclusions as data (data/claims.csv), the relations each family's claims.py registers
to test them (registry, helpers), and the judge."""

from .helpers import *  # noqa: F401,F403  (what a family's claims.py writes its relations with)
from .registry import Edge, Flip, Move, Moves, Outcome, edge, judged, relation, sources  # noqa: F401
