"""The command palette (ctrl+p): the app's commands, named "area: action", and the skills' entries."""
