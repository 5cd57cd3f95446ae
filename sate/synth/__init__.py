"""The offline demo corpora of `sate synth`: English sentences voiced by espeak-ng and flite, in MuST-C layout.

Read in order: phrasebook/ (the generated everyday phrases: lexicons, German inflection, templates by topic) and
ding (the Ding dictionary's sentences) give sentence pairs; splits is the hash rule that puts a sentence in train,
dev or test; voices the speaking engines (reserved and held-out voices); corpus plans talks and voices them; cli is
the command. Only the benchmarks import it too: the demo is a client of the library, not a part of it.
"""
