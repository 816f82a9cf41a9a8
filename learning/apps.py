from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Submits and imports happen in lower layers, which publish events rather than import
        # this app (labeling/events.py).
        from labeling import events
        from learning.triggers import active_learning_after_import, active_learning_after_submit

        events.labels_submitted.connect(
            active_learning_after_submit, dispatch_uid="learning.after_submit"
        )
        events.solutions_imported.connect(
            active_learning_after_import, dispatch_uid="learning.after_import"
        )
        from common.jobs import job_kind_register
        from learning.run import AL_RUNS

        job_kind_register(AL_RUNS)
        # A campaign that steers by a served PRM reorders its queue when new scores are stored
        # (machines.served publishes it).
        from learning.triggers import active_learning_after_scoring

        events.served_scores_stored.connect(
            active_learning_after_scoring, dispatch_uid="learning.after_scoring"
        )

        # The data browser's item page shows the active PRM's step scores, then the served
        # PRM's (registered here, after the PRM's, so that the page lists them in that order).
        from labeling.scores import step_scorer_register
        from learning.step_scores import active_prm_step_scores
        from machines.served import METHOD, served_step_scores

        step_scorer_register("PRM", active_prm_step_scores, deferrable=True)
        step_scorer_register(METHOD, served_step_scores)

        # A campaign's checkpoints, run folders and feature caches (prm/<slug>/) go with it.
        from common.storage import campaign_media_register
        from learning.retention import campaign_prm_media

        campaign_media_register(campaign_prm_media)
