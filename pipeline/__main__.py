"""``python -m agui_pipeline``: the command line, as ``agui-pipeline``."""

from .cli import run

run()
