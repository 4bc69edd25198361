"""The knowledge app's configuration; on start it connects the signals that give each collection its own HNSW graphs."""

from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from knowledge.models import Collection
        from knowledge.vector_indexes import collection_created, collection_deleted

        post_save.connect(collection_created, sender=Collection, dispatch_uid="knowledge.collection_created")
        post_delete.connect(collection_deleted, sender=Collection, dispatch_uid="knowledge.collection_deleted")
