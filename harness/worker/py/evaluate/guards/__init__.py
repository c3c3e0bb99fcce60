"""What watches the candidate's process: tampering, taint, integrity audits,
launch hooks, fingerprints, device state, statefulness, the reference's
operators and native code."""
