"""The engine (private): the pipeline, the per-read machinery both shells share, the async
stream, the synchronous shell, and the sources it reads."""
