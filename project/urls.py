from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from agents.urls import agent_patterns
from core.audit_views import audit_page
from executions.urls import execution_patterns
from experiments.urls import compare_patterns, dataset_patterns, evidence_patterns, experiment_patterns
from project import views as project_views
from project.api import api
from quality.derive_requests.urls import derive_request_patterns
from quality.urls import evaluation_patterns
from schedules.urls import schedule_patterns
from triggers.urls import hook_patterns
from workflows.urls import blueprint_patterns, workflow_patterns

urlpatterns = [
    path("", project_views.overview, name="overview"),
    # Browsers ask for /favicon.ico whatever the pages link to: send them to the one icon.
    path("favicon.ico", login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True))),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("agents/", include((agent_patterns, "agents"))),
    path("derive-requests/", include((derive_request_patterns, "derive_requests"))),
    path("blueprints/", include((blueprint_patterns, "blueprints"))),
    path("workflows/", include((workflow_patterns, "workflows"))),
    path("executions/", include((execution_patterns, "executions"))),
    path("datasets/", include((dataset_patterns, "datasets"))),
    # Before "experiments/" itself, whose experiment pages would take "compare" or "evidence" for an id.
    path("experiments/compare/", include((compare_patterns, "experiment_compare"))),
    path("experiments/evidence/", include((evidence_patterns, "evidence"))),
    path("experiments/", include((experiment_patterns, "experiments"))),
    path("evaluations/", include((evaluation_patterns, "evaluations"))),
    path("schedules/", include((schedule_patterns, "schedules"))),
    path("audit/", audit_page, name="audit"),
    path("hooks/", include((hook_patterns, "triggers"))),  # webhooks: outside sign-in, signed (triggers/)
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
