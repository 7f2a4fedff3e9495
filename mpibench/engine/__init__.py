"""The training engine inside one MPI rank: data and shards, the model, the
attempt history, the step watchdog and the worker loop (:mod:`.worker`) that
drives a sync strategy step by step."""
