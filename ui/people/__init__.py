"""Real people: judgments of a turn, agreement of KnowSim's reading with people's judgments, and
the realism of simulated users against real conversations."""
