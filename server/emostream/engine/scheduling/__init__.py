"""The engine scheduler: :mod:`.work` (stages, queued calls, plans), :mod:`.scheduler`
(:class:`~emostream.engine.scheduling.scheduler.EngineScheduler`, sans-I/O: what runs next)
and :mod:`.load` (the load over a recent window, as admission reads it)."""
