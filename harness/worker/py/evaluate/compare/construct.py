"""Constructs the reference and the candidate from one seed, as KernelBench
does, and fast where that changes nothing.

KernelBench seeds the host's generator, constructs each model on the host
and moves it with .cuda(): both models draw their weights from the host's
generator, in the order their constructors draw. The harness constructs
under `with torch.device(device)` instead (an 8192x8192 Linear initializes
in about a second on the host): factory calls (torch.empty, torch.zeros,
torch.tensor, nn.Linear's parameters) allocate on the device, and random
init draws from the device's generator. Not everything follows the context:
the legacy constructor torch.Tensor(n, m) and tensors made with
device="cpu" stay on the host, and init on them draws from the host's
generator. A constructor written that way
- fails when it mixes the two (a host tensor minus a device scalar made by
  torch.tensor: KernelBench level 2 problem 68 in CUDA-L1's kernel), or
- gets weights from the host's generator while the reference's came from
  the device's: other values, `incorrect` where KernelBench compares equal
  weights (level 2 problem 18).
In both cases the harness constructs both models again KernelBench's way:
on the host from the same seed, then moved (kernelbench_way_needed).

The judge (evaluate.judge.judge) builds its reference through the same functions,
seeded the same way (seed, then get_init_inputs(), then seed again and
construct, as KernelBench), so its weights are the evaluation's. Neither
process changes the mode a model was built in: KernelBench never calls
eval(), so a BatchNorm normalizes by its batch's statistics there, and a
candidate that uses the running statistics is wrong there and here.
"""
import torch

from evaluate.common import clone_tree


def seed(s, device):
    """Seeds the host's generator and the device's, as KernelBench's set_seed."""
    torch.manual_seed(s)
    if device.type == "cuda":
        torch.cuda.manual_seed(s)


def init_inputs_of(mod, s, device):
    """get_init_inputs() after seeding, as KernelBench calls it."""
    seed(s, device)
    return mod.get_init_inputs()


def build(cls, init_inputs, device, under_context):
    """cls(*init_inputs) moved to device, and whether its constructor drew
    from the host's generator. under_context: constructed under the device
    context (the fast way), else on the host (KernelBench's way)."""
    before = torch.default_generator.get_state()
    if under_context:
        with torch.device(device):
            model = cls(*clone_tree(init_inputs))
    else:
        model = cls(*clone_tree(init_inputs))
    drew = not torch.equal(before, torch.default_generator.get_state())
    return model.to(device), drew


def kernelbench_way_needed(device, ref_drew, cand_drew):
    """Whether constructions under the device context may have given the two
    models weights from different generators: on a device with a generator
    of its own, one of them drew from the host's. Drawing from the host on
    purpose only buys KernelBench's own construction."""
    return device.type != "cpu" and (ref_drew or cand_drew)
