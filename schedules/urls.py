from django.urls import path

from schedules import views

schedule_patterns = [
    path("<row_id:schedule_id>/", views.schedule_detail, name="detail"),
]
