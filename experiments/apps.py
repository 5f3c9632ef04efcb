from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    """Datasets (named, versioned lists of items) and experiments: a workflow version run over
    a dataset version, each item a real run, scored. Above quality (an experiment's item may
    be scored by the seed's evaluation), below demo and benchmarks."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "experiments"

    def ready(self):
        # Quality and workflows sit below experiments and cannot import them: they are handed
        # the readers they show and record (a decision's evidence, a version's latest scores).
        from experiments.evidence import read_evidence
        from experiments.releases import version_scores
        from quality.derive_requests.evidence import register_evidence_reader
        from workflows.releases import register_version_scores

        register_evidence_reader(read_evidence)
        register_version_scores(version_scores)
