"""The job's confinement: the sandbox layers a job's child enters (layers;
`python -m sandbox.layers --probe`), its view and PID namespace (jail) and
its cgroup (cgroup)."""
