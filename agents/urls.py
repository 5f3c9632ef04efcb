from django.urls import path

from agents import views

agent_patterns = [
    path("", views.agent_list, name="list"),
]
derive_request_patterns = [
    path("", views.derive_request_list, name="list"),
]
