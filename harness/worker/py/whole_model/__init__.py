"""The whole-model jobs: profile (rank a model's operators, extract hot
regions as problems), verify (a patched model end to end), and the
patterns and extraction they share."""
