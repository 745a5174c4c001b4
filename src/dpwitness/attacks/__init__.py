"""The red team: attacks that show what differential privacy bounds, and classic mistakes."""
