"""The admin console: a web page and JSON API on each node (docs/admin.md)."""
