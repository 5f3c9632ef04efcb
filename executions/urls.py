from django.urls import path

from executions import views

execution_patterns = [
    path("", views.execution_list, name="list"),
    path("plan/<str:workflow_id>/<str:node_id>/", views.node_plan, name="node_plan"),
    # Before `<str:execution_id>/`, which would take "compare" for an id.
    path("compare/", views.execution_compare, name="compare"),
    path("<str:execution_id>/tot/<row_id:node_run_id>/", views.thought_tree, name="thought_tree"),
    path("<str:execution_id>/", views.execution_detail, name="detail"),
]
