from __future__ import annotations

from django.apps import AppConfig


class MachinesConfig(AppConfig):
    name = "machines"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A bad endpoint declaration stops the process at start, naming the entry and field,
        # rather than failing the first job that uses it.
        from machines.endpoints import endpoints_check

        endpoints_check()

        from common.jobs import job_kind_register
        from machines.evidence import EVIDENCE_JOBS
        from machines.generation import GENERATION_JOBS
        from machines.served import SCORING_JOBS

        job_kind_register(GENERATION_JOBS)
        job_kind_register(EVIDENCE_JOBS)
        job_kind_register(SCORING_JOBS)
        from machines.phase1_sampling import PHASE1_SAMPLING

        job_kind_register(PHASE1_SAMPLING)

        # The pages of labeling offer the declared endpoints by name without importing this
        # app: the campaign's settings (phase 1's sampler, a served PRM) and the item page's
        # evidence form (labeling.endpoints).
        from labeling.endpoints import endpoints_offered_register
        from machines.endpoints import CHAT, endpoints_of
        from machines.served import scoring_endpoints

        endpoints_offered_register(samplers=lambda: endpoints_of(CHAT), scorers=scoring_endpoints)

        # Phase 1 mode's candidates for a prefix its tree lacks (labeling.queue.phase1): a job
        # that a worker runs while the page polls it.
        from labeling.queue import candidate_sampling_register
        from machines.phase1_sampling import phase1_sampling_start

        candidate_sampling_register(phase1_sampling_start)
