"""Applying a plan: the compacted history (`apply`) and what the archive holds of each pair let go
(`archived_pair`)."""
