"""The evaluation's stages in pipeline order: load, warmup, correctness,
integrity, timing, after (evaluate.main runs them)."""
