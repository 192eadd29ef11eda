"""Experience memory: SQLAlchemy store, retrieval, adoption-traced utility (ATU), utility-gated consolidation (UGC)."""
