"""The model and the graph helping the user grow it: distil a chat, integrate a node, link what a text
mentions."""
