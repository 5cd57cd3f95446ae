"""`python -m sate.bench`: see `sate.bench.cli`."""

from sate.bench.cli import main

raise SystemExit(main())
