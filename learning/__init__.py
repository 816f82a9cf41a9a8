"""Active learning: retrain the PRM on the labels so far and put convincing wrong answers first.

PRM800K's selection rule ("Let's Verify Step by Step", section 4): score every open solution with
the current PRM and show labelers mostly *convincing wrong-answer* solutions (the PRM rates them
highly but their final answer is wrong), plus some of the most convincing others. The queue serves
by ``Solution.priority`` (highest first), so a run rewrites ``priority`` in bulk.

A run is one kind of job (``learning.run.AL_RUNS``, ``common.jobs``): its Celery task
``learning.active_learning_run`` does ``learning.run.active_learning_work``;
``learning.triggers.active_learning_trigger`` creates the run row, which is also the lock (see
``ActiveLearningRun``), and sends the task on commit.

Each concept has its own module:

- ``learning.triggers``: ``active_learning_trigger``, the triggers after a submit and after an
  import, ``submitted_labels`` (what a run trains on);
- ``learning.ordering``: ``Scored``, ``queue_order``, ``head_summary``, ``solutions_rewrite``;
- ``learning.strategies``: the selection strategies (``Campaign.al_strategy``), ``strategy_order``;
- ``learning.bestofn``: the best-of-N curve a run stores (PRM, ORM, majority vote, oracle);
- ``learning.run``: ``active_learning_run``, ``active_learning_work`` and its stages;
- ``learning.rescoring``: the PRM scores of the open solutions, featurised in ``score_workers``.

Failure safety: the new model is registered inactive, and only the last step, one transaction,
activates it and rewrites the queue. A worker killed before that leaves the previous model active
and the queue as it was; the run keeps its lock until the jobs sweep (on beat) sees its heartbeat go
stale and queues it again, or fails it after ``STEPWISE_AL_MAX_ATTEMPTS``, as it does every kind
of job (``common.jobs``).
"""
