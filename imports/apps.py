from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "imports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from common.jobs import job_kind_register
        from imports.evidence import EVIDENCE_JOBS
        from imports.generation import GENERATION_JOBS
        from imports.services import IMPORT_JOBS

        job_kind_register(IMPORT_JOBS)
        job_kind_register(GENERATION_JOBS)
        job_kind_register(EVIDENCE_JOBS)

        # Phase 1 mode's candidates for a prefix its tree lacks (labeling.queue.phase1).
        from imports.phase1_sampling import phase1_candidates_sample
        from labeling.queue import candidate_sampler_register

        candidate_sampler_register(phase1_candidates_sample)
