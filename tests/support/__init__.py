"""What tests share besides fixtures: helpers any test module imports. Fixtures stay in conftest files, where
pytest finds them by name; a conftest imports what it needs from here like any other module."""
