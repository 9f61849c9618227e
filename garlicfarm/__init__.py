"""garlicfarm: the Garlic Farm protocol (I2P proposal 150) as a Twisted service."""

__version__ = "0.1.0"
