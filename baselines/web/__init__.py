"""A page to type into: a local web server on which students see each task's predictions drawn (`serve`)."""
