"""Pictures of predictions: entities, trees, relations, answers and labels as HTML and SVG, for a notebook, a page."""
