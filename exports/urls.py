from __future__ import annotations

from django.urls import path

from exports import views

app_name = "exports"

# Mounted under campaigns/<slug:slug>/exports/ by stepwise/urls.py.
urlpatterns = [
    path("", views.export_list, name="list"),
    path("<int:pk>/files/<str:name>", views.export_download, name="download"),
    path("annotators.csv", views.annotator_pseudonyms_csv, name="annotators"),
]
