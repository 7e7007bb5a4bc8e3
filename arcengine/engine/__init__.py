"""The campaign: agents, memory, budget, leaderboard and STOP rules over the recording layer, the guard and the
providers; its configuration, its resume from a log, and the stand-ins used to test and benchmark it."""
