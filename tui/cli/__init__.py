"""The `cairn` command line: main.py builds the parser from one module per verb group and runs a verb;
common.py holds what several verbs share."""
