"""Privacy rules: neighbour relations and Δ per query, the ε/δ/ρ accounting math, the budget and its ledger."""
