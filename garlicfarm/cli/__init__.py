"""The ``garlicfarm`` command line."""
