"""``python -m agui_pipeline``: the command line, as ``agui-pipeline``."""

from .cli import main

raise SystemExit(main())
