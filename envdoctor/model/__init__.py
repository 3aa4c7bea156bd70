"""The model: the facts snapshot, the findings and the report, their vocabulary (the category catalogue), the
declared targets, the project configuration and the fleet's data. Every layer above reads these; they import
only ``domain`` and each other (docs/architecture.md "Layers")."""
