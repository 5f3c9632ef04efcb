from django.urls import path

from workflows import views

blueprint_patterns = [
    path("", views.blueprint_list, name="list"),
]
workflow_patterns = [
    path("", views.workflow_list, name="list"),
]
