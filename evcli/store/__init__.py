"""The trace store (`evcli.store.db`) and session documents (`evcli.store.documents`).

Import from the submodules: reading a session file must not load the database layer.
"""
