"""Queries: the one description of a query (statistic, column, bounds, where, by) with its
parts and Δ, its filter tree, and its plan."""
