"""Twisted networking: connections, peers, endpoints."""
