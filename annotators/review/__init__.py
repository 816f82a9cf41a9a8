"""Review and adjudication, in one home: a reviewer accepts, corrects or rejects a submission
(a rejection sends the solution back to the queue), and decides the steps annotators disagree
on. ``services`` writes, ``selectors`` reads, ``views`` are the pages.
"""
