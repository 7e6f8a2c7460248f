"""Problem and result types shared by heuristics and models (plain data)."""
