"""``python -m agui_pipeline``: the command line, as ``agui-pipeline``."""

from agui_pipeline.cli import run

run()
