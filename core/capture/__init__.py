"""Bringing in what users already have elsewhere: web pages by URL (web.py) and files such as PDFs,
plain text and markdown (files.py), each stored as a node whose source is the text and whose link is
where it came from."""
