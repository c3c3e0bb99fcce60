# The job's view is laid out while other programs create and remove their
# temp files: an entry of a shadowed folder (here, a temp folder; in the
# view, /tmp) removed between being listed and bound back must be left
# out, not end the view half made (the job's own folder then stayed
# read-only and the job exited before its first stage). Run as root by
# TestJailShadowSurvivesVanishingEntries, in a child with a mount
# namespace of its own; prints "shown N [names]" or "raised ...".
import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
from sandbox import jail  # noqa: E402


class Racing(jail._Binder):
    """Removes the entry named gone just before binding it back."""

    def bind(self, fd, target, readonly):
        if target.endswith("gone"):
            os.rmdir(os.readlink("/proc/self/fd/%d" % fd))
        return super().bind(fd, target, readonly)


def main():
    if jail._libc.unshare(jail.CLONE_NEWNS) != 0:
        print("unshare failed")
        return 2
    jail._mount(None, "/", None, jail.MS_REC | jail.MS_PRIVATE)
    top = tempfile.mkdtemp()
    for n in ("gone", "kept"):
        os.mkdir(os.path.join(top, n))
    try:
        n = jail._shadow(top, None, Racing(), 0o755)
    except OSError as e:
        print("raised %s: %s" % (type(e).__name__, e))
        return 1
    print("shown %d %s" % (n, sorted(os.listdir(top))))
    return 0


sys.exit(main())
