"""Agreement statistics between judges and humans, and verdict-label normalisation."""
