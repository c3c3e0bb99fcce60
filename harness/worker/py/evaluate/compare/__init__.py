"""Outputs against the reference's: the comparison and its tolerance, the
inputs they are compared on (construct, unseen, inputs_blame) and the
checks on degenerate or near-constant references."""
