"""Gold: the reference step ratings of quality-control and screening solutions, in one home.

``scores`` is the rule (an annotator's ratings scored against gold: the screening gate, the QC
pause and the quality figures); ``services`` makes a solution gold (from the gold editor's
ratings, one annotator's, or the consensus of all, one solution or many); ``selectors`` reads
the gold list, what makes a gold set weak, and gold taken from labels.

It lives in ``labeling`` because the queue scores screening and QC answers at submit time and the
data browser makes gold from labels, and both are ``labeling``'s; the gold editor's pages are
``annotators``' (``annotators:gold``), and call these.
"""

from __future__ import annotations
