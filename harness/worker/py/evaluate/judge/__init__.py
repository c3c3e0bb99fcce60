"""The judge: a process of each evaluation the candidate cannot reach
(judge), the candidate-side client, its wire format and batches, the host
load it watches and the reference timing it owns."""
