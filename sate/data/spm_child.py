"""SentencePiece's training as a process of its own (``python -m sate.data.spm_child``), started by `sate vocab`.

SentencePiece trains in C++ holding the interpreter, where Python runs no signal handler: in the command's own
process Ctrl-C, `kill` or a closed terminal waited for the training to end (minutes on a large vocabulary). Here it
is a child the command kills when a signal ends it, and that ends with the command (its pid, the one argument) when
the command is killed outright (SIGKILL, the out-of-memory killer). A fresh interpreter, not a fork: a process forked
from one with threads can deadlock on a lock held at the fork. This module imports nothing of sate's but
`sate.errors`, so it starts in a few hundredths of a second.

Standard input: a JSON header line ``{"size": N, "threads": T, "normalization": RULE}``, then one JSON string per
sentence. Standard output: the model's bytes. A failure SentencePiece reports is its reason on standard error and
exit status 3.
"""

from __future__ import annotations

import io
import json
import signal
import sys

import sentencepiece as spm

from sate.errors import end_with_parent

FAILED = 3  # the exit status for a training SentencePiece refused (its reason on standard error)


def main() -> int:
    if len(sys.argv) > 1:  # a `sate vocab` killed with SIGKILL left it training on, every thread busy, for minutes
        end_with_parent(int(sys.argv[1]))  # (twenty-ninth hostile pass)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C at the terminal reaches this process too: end quietly
    header = json.loads(sys.stdin.readline())
    sentences = [json.loads(line) for line in sys.stdin]
    spm.set_random_generator_seed(1)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model, vocab_size=header["size"], model_type="unigram",
            character_coverage=1.0, unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1, input_sentence_size=2_000_000,
            shuffle_input_sentence=True, num_threads=header["threads"], minloglevel=2,
            normalization_rule_name=header.get("normalization", "nmt_nfkc"))
    except (RuntimeError, SyntaxError) as err:  # SentencePiece's own kinds for a failure and for a bad argument
        print(str(err).split("] ")[-1], file=sys.stderr)
        return FAILED
    sys.stdout.buffer.write(model.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
