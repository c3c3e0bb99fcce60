# A folder the job may write that is closed to others (0700: the harness's
# test PCH folder, made by mkdtemp under /tmp) must keep what the job
# writes: the view laid a tmpfs over it, the build step's headers went
# there and were lost with the view, and every evaluation built them
# again. Run as root by TestJailClosedWritableFolderKeepsWrites in a
# child of its own: enters the view, writes, leaves; prints "kept" or
# "lost" as the host sees the folder.
import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
from sandbox import jail  # noqa: E402


def main():
    folder = tempfile.mkdtemp(prefix="kevolve-closed-")  # 0700
    pid = os.fork()
    if pid == 0:
        ok, why = jail.enter_view([folder], [folder], 1 << 24, 1 << 24)
        if not ok:
            print("view failed:", why, flush=True)
            os._exit(2)
        with open(os.path.join(folder, "written"), "w") as f:
            f.write("x")
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return 1
    print("kept" if os.path.exists(os.path.join(folder, "written")) else "lost")
    return 0


sys.exit(main())
