"""``python -m benchmarks [--quick] [--docs]``: the comparison table, scaling plot, memory."""

from .suite import main

raise SystemExit(main())
