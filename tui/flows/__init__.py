"""Multi-step flows the panes and the palette start: reviewing links, editing in $EDITOR, un-retiring a
node, loading the Getting started graph. A flow may import the widgets and screens it drives; widgets
reach a flow through a message to the app, never by importing it."""
