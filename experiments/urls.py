from django.urls import path

from experiments import compare_views, evidence_views, experiment_views
from experiments import dataset_views as views

# `upload` and `add-run` come before a dataset's name, which may therefore be neither
# (services.RESERVED_NAMES).
dataset_patterns = [
    path("", views.dataset_list, name="list"),
    path("upload/", views.dataset_upload, name="upload"),
    path("add-run/<str:execution_id>/", views.dataset_add_run, name="add_run"),
    path("<str:name>/", views.dataset_detail, name="detail"),
    path("<str:name>/export/", views.dataset_export, name="export"),
    path("<str:name>/items/<path:item_id>/remove/", views.dataset_item_remove, name="remove_item"),
]

# Mounted at /experiments/compare/, before any experiment's own page (which would take
# "compare" for an id): the page (?ids=A,B[,…]) and its CSV export (the same query).
compare_patterns = [
    path("", compare_views.experiment_compare, name="page"),
    path("csv/", compare_views.experiment_compare_csv, name="csv"),
]

# Evidence where decisions are made (experiments/evidence_views.py), under /experiments/evidence/.
evidence_patterns = [
    path("derive-requests/<str:derive_request_id>/", evidence_views.evidence_page, name="derive_request"),
    path("derive-requests/<str:derive_request_id>/start/", evidence_views.evidence_start, name="start"),
    path("derive-requests/<str:derive_request_id>/decide/", evidence_views.evidence_decide, name="decide"),
    path("releases/<str:workflow_id>/<int:number>/", evidence_views.version_release, name="release"),
]

experiment_patterns = [
    path("", experiment_views.experiment_list, name="list"),
    path("new/", experiment_views.experiment_new, name="new"),
    path("<str:experiment_id>/", experiment_views.experiment_detail, name="detail"),
    path("<str:experiment_id>/cancel/", experiment_views.experiment_cancel_view, name="cancel"),
]
