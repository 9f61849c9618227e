"""The application layer: status records, the common algorithm, the replicated farm state."""
