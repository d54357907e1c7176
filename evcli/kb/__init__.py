"""Knowledge: runbooks indexed for ranked, layered retrieval (DESIGN §5)."""

from evcli.kb.index import EvidenceBlock, IndexReport, KnowledgeIndex, Skill, default_index_path

__all__ = ["EvidenceBlock", "IndexReport", "KnowledgeIndex", "Skill", "default_index_path"]
