"""Review and adjudication, in one home: a reviewer accepts, corrects or rejects a submission
(a rejection sends the solution back to the queue), and decides the steps annotators disagree
on. ``services`` writes, ``selectors`` reads, ``forms`` and ``views`` are the pages.

What a review does to the queue (rejected work gives its slot back; accepted again, takes it)
is the queue's own rule, ``labeling.queue.review``, which ``services`` calls in its transaction;
the annotator's own reviewed work is read by ``labeling.selectors.my_work`` (their campaign page
shows it too); the data browser's "send for review" and "send to adjudication" bulk actions are
``labeling.curation.actions``'. Everything else about review lives here.
"""
