"""Attention analysis: the SATE paper's localness study and attention heatmaps (`sate analyze`).

Read in order: capture (forward hooks that record ESPnet attention weights), locality (the
localness of each encoder layer, table and line plot), heatmap (one utterance's cross-attention
and encoder self-attention as pictures), cli (inputs, CMVN rule and the two sub-commands).
"""
