from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: its workflows, their agents and knowledge base (`load_demo`), and the
    builtin skills only those agents perform."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "demo"

    def ready(self):
        # The builtin backend does not know the demo: the demo tells it its skills, and tells
        # evaluations how to check a Game-of-24 answer again.
        from agents.backends.builtin import register_skill
        from demo.skills import DEMO_SKILLS
        from engine.tot.game24 import verify
        from quality.evaluations import register_answer_verifier

        for name, perform in DEMO_SKILLS.items():
            register_skill(name, perform)
        register_answer_verifier(verify)
