from django.urls import path

from agents import views

agent_patterns = [
    path("", views.agent_list, name="list"),
    path("<str:agent_id>/", views.agent_detail, name="detail"),
    path("<str:agent_id>/edit/", views.agent_edit, name="edit"),
]
