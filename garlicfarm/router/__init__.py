"""The router seam: what the farm needs from the local I2P router, and its implementations."""
