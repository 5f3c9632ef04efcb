from django.urls import path

from workflows import views

blueprint_patterns = [
    path("", views.blueprint_list, name="list"),
    path("<str:blueprint_id>/", views.blueprint_detail, name="detail"),
]
workflow_patterns = [
    path("", views.workflow_list, name="list"),
    path("new/", views.workflow_new, name="new"),
    path("<str:workflow_id>/", views.workflow_detail, name="detail"),
]
