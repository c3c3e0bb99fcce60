"""The evaluation job (main.main): a candidate judged against its reference,
stage by stage (stages/), by a judge process it cannot reach (judge/),
its outputs compared (compare/) and its process watched (guards/).

Kept empty: its modules import one another, never this package's namespace."""
