"""The Simulate page: its setup form, the player over one run or a pair, the gauge, the turn card
and the one-click demo."""
