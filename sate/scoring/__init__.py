"""Scoring: sacreBLEU and WER of hypothesis files (`sate score`), results tables and curves (`sate report`)."""
