"""Markdown folders and other tools' files: parse and resolve notes, sync and watch a vault, export,
RA-H OS import."""
