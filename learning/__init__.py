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

- ``learning.triggers``: ``active_learning_trigger``, the triggers after a submit, an import and
  stored served scores, ``submitted_labels`` (what the automatic trigger counts);
- ``learning.run``: ``active_learning_run``, the job kind ``AL_RUNS`` and its work, which walks
  ``learning.stages.STAGES`` (each stage's work, and when it applies);
- ``learning.strategies``: the selection strategies (``Campaign.al_strategy``), each a registered
  class declaring the signals and settings it uses; ``learning.placing`` places their orders with
  a control arm; ``learning.auto`` chooses under ``auto``;
- ``learning.ordering``: ``Scored``, ``queue_order`` (PRM800K's rule), ``head_summary``;
- ``learning.scoring``: what the PRM scores, read from the database (``prm.batch_scoring``
  computes); ``learning.machine_evidence``: what the machines say of the steps;
- ``learning.bestofn``: the best-of-N curve a run stores (PRM, ORM, majority vote, oracle);
- ``learning.efficiency``: is the strategy paying, against the control arm.

The queue itself is written by its owner (``labeling.queue.order.queue_reorder``).

Failure safety: the new model is registered inactive, and only the last step, one transaction,
activates it and rewrites the queue. A worker killed before that leaves the previous model active
and the queue as it was; the run keeps its lock until the jobs sweep (on beat) sees its heartbeat go
stale and queues it again, or fails it after ``STEPWISE_AL_MAX_ATTEMPTS``, as it does every kind
of job (``common.jobs``).
"""
