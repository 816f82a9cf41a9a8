"""Reads for the annotator's pages, one module per page: ``labelling`` (the labelling page and the
API's assignment), ``home`` (Home, and the figures the labelling page's head shows too) and
``my_work`` (an annotator's own finished and reviewed work). Reads only, no writes.

An annotator sees the problem, its ground-truth answer (as PRM800K's labelers did), the steps and
their own labels. Never gold ratings (``Step.gold_rating``), never other annotators' labels, and
never whether a solution is a quality-control question: the queries select only the columns that
may be shown.
"""

from __future__ import annotations
