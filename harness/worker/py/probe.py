"""Device probe, run in a forked child so the parent never initializes CUDA."""
import platform


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "cpu: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu: " + (platform.processor() or platform.machine())


def main(args, ctx):
    out = {"cuda": False, "hip": "", "device_count": 0, "device_name": "", "cpu_name": _cpu_name(), "error": ""}
    try:
        import torch
        # A ROCm build drives AMD GPUs through torch.cuda: only
        # torch.version.hip tells the vendors apart.
        out["hip"] = getattr(torch.version, "hip", None) or ""
        if torch.cuda.is_available():
            # Create the context for real: a device that is listed but cannot
            # be initialized (e.g. a parent that touched CUDA before fork) is
            # not a usable target.
            torch.zeros(1, device="cuda").add_(1)
            torch.cuda.synchronize()
            out["device_name"] = torch.cuda.get_device_name(0)
            out["device_count"] = torch.cuda.device_count()
            out["cuda"] = True
        else:
            out["error"] = "torch.cuda.is_available() is False (torch %s, CUDA build %s)" % (
                torch.__version__, torch.version.cuda)
    except Exception as e:  # noqa: BLE001
        out["error"] = repr(e)
    return out
