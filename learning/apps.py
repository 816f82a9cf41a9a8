from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Submits and imports happen in lower layers, which publish events rather than import
        # this app (labeling/events.py).
        from labeling import events
        from learning.active_learning import (
            active_learning_after_import,
            active_learning_after_submit,
        )

        events.labels_submitted.connect(
            active_learning_after_submit, dispatch_uid="learning.after_submit"
        )
        events.solutions_imported.connect(
            active_learning_after_import, dispatch_uid="learning.after_import"
        )
        from common.jobs import job_kind_register
        from learning.triggers import AL_RUNS

        job_kind_register(AL_RUNS)

        # The data browser's item page asks for the active PRM's step scores.
        from learning.step_scores import step_scores_answer

        events.step_scores_wanted.connect(step_scores_answer, dispatch_uid="learning.step_scores")
