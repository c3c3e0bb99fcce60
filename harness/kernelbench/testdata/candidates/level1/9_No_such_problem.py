# Names a problem the fake KernelBench tree does not have: reported as unmatched.
